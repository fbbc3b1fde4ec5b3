"""Former home of the hyperparameter-mixture certificates, now [`privselect.selection.certify`][privselect.selection.certify] (the certificates) and [`privselect.selection.bounds.cor62`][privselect.selection.bounds.cor62] (the bound) (kept so old imports work)."""

from .bounds.cor62 import COR62, smallest_cor62_base_epsilon  # noqa: F401
from .certify import certify_hyperparameter_mixture, cor62_certificate  # noqa: F401

__all__ = ["certify_hyperparameter_mixture", "cor62_certificate", "smallest_cor62_base_epsilon"]
