"""Selection: distributions of K, privacy-profile and RDP bounds, certificates, calibration, RNM."""

from .bounds import (
                     SelectionShift,
                     rdp_selection_epsilon,
                     selection_epsilons,
                     selection_profile,
                     selection_rdp_curve,
                     selection_shift,
)
from .calibrate import (
                     Cor62Thresholds,
                     calibrate_epochs,
                     calibrate_k_mean,
                     calibrate_noise,
                     calibrate_steps,
                     cor62_thresholds,
                     meets_thresholds,
)
from .certify import Certificate, certify
from .distributions import (
                     Binomial,
                     Geometric,
                     KDistribution,
                     Logarithmic,
                     Poisson,
                     TruncatedNegativeBinomial,
                     k_from_dict,
)
from .rnm import report_noisy_max, rnm_epsilon_closed_form, rnm_profile, rnm_rdp_epsilon

__all__ = [
    "KDistribution", "k_from_dict", "TruncatedNegativeBinomial", "Geometric", "Logarithmic", "Binomial", "Poisson",
    "SelectionShift", "selection_shift", "selection_profile", "selection_epsilons", "selection_rdp_curve",
    "rdp_selection_epsilon",
    "Certificate", "certify", "calibrate_noise", "calibrate_steps", "calibrate_epochs", "calibrate_k_mean",
    "Cor62Thresholds", "cor62_thresholds",
    "meets_thresholds", "report_noisy_max", "rnm_profile", "rnm_epsilon_closed_form", "rnm_rdp_epsilon",
]
