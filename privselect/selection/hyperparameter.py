"""Former home of the hyperparameter-mixture certificates, now [`privselect.selection.bounds.cor62`][privselect.selection.bounds.cor62] (kept so old imports work)."""

from .bounds.cor62 import (COR62, certify_hyperparameter_mixture, cor62_certificate,  # noqa: F401
                           smallest_cor62_base_epsilon)

__all__ = ["certify_hyperparameter_mixture", "cor62_certificate", "smallest_cor62_base_epsilon"]
