"""privselect: differentially private hyperparameter selection with certified privacy profiles.

Data flow: mechanism descriptions -> accountants -> `PrivacyProfile` -> selection bounds ->
certificates -> the private tuner. This module re-exports the public API only, lazily
(PEP 562): ``import privselect`` loads none of scikit-learn, Optuna, joblib, matplotlib, tqdm or
dask; each public name imports its module on first use.

Adding a public name: add one line ``"Name": ".module",`` to ``_PUBLIC`` below.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

#: Public name -> the module (relative to this package) that defines it. A name equal to its
#: module's last component (``"space": ".tuning.space"``) whose module has no such attribute is the
#: module itself.
_PUBLIC: dict[str, str] = {
    # mechanisms
    "Mechanism": ".mechanisms",
    "Gaussian": ".mechanisms",
    "Laplace": ".mechanisms",
    "RandomizedResponse": ".mechanisms",
    "PureDP": ".mechanisms",
    "ApproxDP": ".mechanisms",
    "PoissonSubsampled": ".mechanisms",
    "SampledWithoutReplacement": ".mechanisms",
    "Composition": ".mechanisms",
    "compose": ".mechanisms",
    "NeighbouringRelation": ".mechanisms",
    "from_dp_event": ".dp_events",
    "to_dp_event": ".dp_events",
    "dpsgd": ".mechanisms",
    "ProfileMechanism": ".accounting.dominating",
    "PoissonSplit": ".accounting.dominating",
    # accounting
    "privacy_profile": ".accounting",
    "Accountant": ".accounting",
    "get_accountant": ".accounting",
    "PrivacyProfile": ".accounting",
    "ErrorBudget": ".accounting",
    "gdp_profile": ".accounting",
    "gaussian_delta": ".accounting",
    "gaussian_epsilon": ".accounting",
    # selection
    "TruncatedNegativeBinomial": ".selection",
    "Geometric": ".selection",
    "Logarithmic": ".selection",
    "Binomial": ".selection",
    "Poisson": ".selection",
    "certify": ".selection",
    "Certificate": ".selection",
    "selection_profile": ".selection",
    "certify_pipeline": ".selection.pipeline",
    "certify_adaptive": ".selection.adaptive",
    "report_noisy_max": ".selection",
    "calibrate_noise": ".selection",
    "calibrate_steps": ".selection",
    "calibrate_epochs": ".selection",
    "calibrate_k_mean": ".selection",
    "RiskTarget": ".attack_risk",
    # risk
    "risk": ".attack_risk",
    "Risk": ".attack_risk",
    # errors
    "CertificationError": ".errors",
    "UnsupportedMechanismError": ".errors",
    "PrivateStudyError": ".errors",
    "AllRunsFailedError": ".errors",
    "RandomnessLeakError": ".errors",
    "WorkerLossError": ".errors",
    "DensityRatioError": ".errors",
    "UnreachableTargetError": ".errors",
    # tuning
    "PrivateTuner": ".tuning",
    "TuningResult": ".tuning",
    "FinalRun": ".tuning",
    "space": ".tuning.space",
    "Choice": ".tuning.space",
    "Uniform": ".tuning.space",
    "LogUniform": ".tuning.space",
    "IntUniform": ".tuning.space",
    "AdaptiveSearch": ".tuning.adaptive",
    "GaussianProcessUCB": ".tuning.adaptive",
    "Parzen": ".tuning.adaptive",
    # apps
    "DPSGDClassifier": ".apps.dpsgd",
    "make_dpsgd_trainer": ".apps.dpsgd",
}

__all__ = [*_PUBLIC, "__version__"]


def __getattr__(name: str) -> Any:
    """Import the module behind public ``name`` on first use (PEP 562) and cache the value."""
    try:
        module_name = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'privselect' has no attribute {name!r}") from None
    module = importlib.import_module(module_name, __name__)
    is_module = module_name.rpartition(".")[2] == name and not hasattr(module, name)
    value = module if is_module else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

