"""Former home of the K-mixture bound, now [`privselect.selection.bounds.mixture`][privselect.selection.bounds.mixture] (kept so old imports work)."""

from .bounds.mixture import K_MIXTURE, KMixtureCurve, k_mixture_profile  # noqa: F401

__all__ = ["k_mixture_profile", "KMixtureCurve", "K_MIXTURE"]
