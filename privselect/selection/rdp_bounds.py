"""Former home of the RDP selection bounds, now [`privselect.selection.bounds.rdp`][privselect.selection.bounds.rdp] (kept so old imports work)."""

from .bounds.rdp import rdp_selection_epsilon, selection_rdp_curve, supports_rdp_selection  # noqa: F401

__all__ = ["selection_rdp_curve", "rdp_selection_epsilon", "supports_rdp_selection"]
