"""Former home of [`certify`][privselect.selection.certify.certify] and [`Certificate`][privselect.selection.certify.Certificate] (kept so old imports work)."""

from .certify import FAMILIES, Certificate, certify  # noqa: F401

__all__ = ["Certificate", "certify", "FAMILIES"]
