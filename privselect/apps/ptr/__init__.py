"""Generalized Propose-Test-Release and private linear regression (KRW Sec. 6.1).

* [`gptr`][privselect.apps.ptr.gptr]: [`GeneralizedPTR`][privselect.apps.ptr.GeneralizedPTR] (KRW Thm 6.1) and the private one-sided bounds its tests use;
* [`ops`][privselect.apps.ptr.ops]: the one-posterior-sample (OPS) mechanism, its exact privacy and data-dependent bounds;
* [`regression`][privselect.apps.ptr.regression]: [`OPSRegressor`][privselect.apps.ptr.OPSRegressor], [`OPSPTRRegressor`][privselect.apps.ptr.OPSPTRRegressor] (scikit-learn estimators);
* [`ssp`][privselect.apps.ptr.ssp]: sufficient-statistics perturbation: [`SSPRidgeSelectionRegressor`][privselect.apps.ptr.SSPRidgeSelectionRegressor]
  (the recommended default), [`AdaSSPRegressor`][privselect.apps.ptr.AdaSSPRegressor] (two or three releases),
  Wang's printed [`AdaSSPWangRegressor`][privselect.apps.ptr.AdaSSPWangRegressor], [`TrivialRegressor`][privselect.apps.ptr.TrivialRegressor];
* [`baselines`][privselect.apps.ptr.baselines]: output perturbation and AdaOPS with corrected calibrations;
* [`tuning`][privselect.apps.ptr.tuning]: OPS-PTR tuned by [`PrivateTuner`][privselect.tuning.PrivateTuner] with geometric K,
  certified by KRW Thm 5.2, and the Liu-Talwar certificate for the same tuning;
* [`model_selection`][privselect.apps.ptr.model_selection]: [`PrivateRegressorSelection`][privselect.apps.ptr.PrivateRegressorSelection], a private choice among private
  regressors (AdaSSP, AdaOPS, OPS-PTR) with one certificate;
* [`tukey`][privselect.apps.ptr.tukey]: [`TukeyEMRegressor`][privselect.apps.ptr.TukeyEMRegressor], TukeyEM (Amin et al. 2023): no feature or label bounds;
* [`table`][privselect.apps.ptr.table]: [`load_table`][privselect.apps.ptr.load_table], a user's own table mapped into public bounds;
* [`certificate`][privselect.apps.ptr.certificate]: [`ReleaseCertificate`][privselect.apps.ptr.ReleaseCertificate], the
  ``certificate_`` of every single-release regressor after ``fit`` (the tuned ones carry their selection certificate);
* [`data`][privselect.apps.ptr.data]: a loader for the UCI regression files (takes a path).
"""

from .baselines import AdaOPSRegressor, NonPrivateRidge, OutputPerturbationRegressor, output_perturbation_alpha
from .certificate import ReleaseCertificate, release_certificate
from .data import UCI_DATASETS, load_uci, read_numeric_table
from .gptr import BOTTOM, GaussianBound, GeneralizedPTR, LaplaceBound, PTRResult, analytic_gaussian_sigma
from .model_selection import PrivateRegressorSelection
from .ops import (
    ops_delta,
    ops_epsilon,
    ops_epsilon_exact,
    ops_epsilon_safe,
    ops_epsilon_wang,
    ops_gamma,
    ops_hockey_stick,
    ops_local_bounds,
    ops_renyi,
    sample_ops,
)
from .regression import OPSPTR, OPSPTRRegressor, OPSRegressor, RefusalWarning, balanced_alpha, default_ops_ptr_alpha
from .ssp import (
    AdaSSPRegressor,
    AdaSSPWangRegressor,
    SSPRidgeSelectionRegressor,
    TrivialRegressor,
    pure_dp_gdp_mu,
    releases_lambda_min,
)
from .table import Table, load_table, read_table
from .tukey import TukeyEMRegressor
from .tuning import (
    LiuTalwarCertificate,
    RunBudget,
    TunedOPSPTRRegressor,
    default_tuning_k,
    liu_talwar_certificate,
    liu_talwar_run_budget,
    profile_run_budget,
    selection_run_budget,
)

__all__ = [
    "BOTTOM", "GeneralizedPTR", "PTRResult", "LaplaceBound", "GaussianBound", "analytic_gaussian_sigma",
    "ops_hockey_stick", "ops_delta", "ops_epsilon", "ops_epsilon_exact", "ops_epsilon_safe", "ops_epsilon_wang",
    "ops_renyi", "ops_gamma", "ops_local_bounds", "sample_ops",
    "OPSPTR", "OPSRegressor", "OPSPTRRegressor", "RefusalWarning", "balanced_alpha", "default_ops_ptr_alpha",
    "AdaSSPRegressor", "AdaSSPWangRegressor", "SSPRidgeSelectionRegressor", "TrivialRegressor", "pure_dp_gdp_mu",
    "releases_lambda_min", "TukeyEMRegressor",
    "OutputPerturbationRegressor", "AdaOPSRegressor", "NonPrivateRidge", "output_perturbation_alpha",
    "TunedOPSPTRRegressor", "PrivateRegressorSelection", "RunBudget", "profile_run_budget", "selection_run_budget", "liu_talwar_run_budget", "LiuTalwarCertificate",
    "liu_talwar_certificate", "default_tuning_k",
    "ReleaseCertificate", "release_certificate",
    "load_uci", "read_numeric_table", "UCI_DATASETS", "load_table", "read_table", "Table",
]
