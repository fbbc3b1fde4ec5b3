"""privselect: differentially private hyperparameter selection with certified privacy profiles.

Data flow: mechanism descriptions -> accountants -> :class:`PrivacyProfile` -> selection
bounds -> certificates -> the private tuner. This module re-exports the public API only.
"""

from .accounting import (
    CertificationError,
    ErrorBudget,
    PrivacyProfile,
    gaussian_delta,
    gaussian_epsilon,
    gdp_profile,
    privacy_profile,
)
from .selection import (
    Binomial,
    Certificate,
    Geometric,
    Logarithmic,
    Poisson,
    TruncatedNegativeBinomial,
    certify,
    report_noisy_max,
    selection_profile,
)
from .mechanisms import (
    ApproxDP,
    Composition,
    Gaussian,
    Laplace,
    Mechanism,
    PoissonSubsampled,
    PureDP,
    RandomizedResponse,
    SampledWithoutReplacement,
    compose,
)

from .accounting.dominating import ProfileMechanism
from . import space
from .dpsgd import DPSGDClassifier, make_dpsgd_trainer
from .tuning import PrivateTuner, TuningResult

__version__ = "0.1.0"

__all__ = [
    "Mechanism",
    "Gaussian",
    "Laplace",
    "RandomizedResponse",
    "PureDP",
    "ApproxDP",
    "PoissonSubsampled",
    "SampledWithoutReplacement",
    "Composition",
    "compose",
    "ProfileMechanism",
    "privacy_profile",
    "PrivacyProfile",
    "ErrorBudget",
    "CertificationError",
    "gdp_profile",
    "gaussian_delta",
    "gaussian_epsilon",
    "TruncatedNegativeBinomial",
    "Geometric",
    "Logarithmic",
    "Binomial",
    "Poisson",
    "certify",
    "Certificate",
    "selection_profile",
    "report_noisy_max",
    "PrivateTuner",
    "TuningResult",
    "space",
    "DPSGDClassifier",
    "make_dpsgd_trainer",
    "__version__",
]
