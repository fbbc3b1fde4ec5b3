"""Former home of :func:`certify` and :class:`Certificate` (kept so old imports work)."""

from .certify import FAMILIES, Certificate, certify  # noqa: F401

__all__ = ["Certificate", "certify", "FAMILIES"]
