"""Selection bounds: one module per bound family, registered by K law in one table.

* [`profile`][privselect.selection.bounds.profile]: privacy-profile bounds for "best of K runs" (Koskela, Redberg, Wang
  2024, Thm 5.2, Thm 5.7, Cor. 5.8);
* [`rdp`][privselect.selection.bounds.rdp]: the RDP baselines (Papernot, Steinke 2022; KRW Thm 5.1, 5.6);
* [`cor62`][privselect.selection.bounds.cor62]: KRW Cor. 6.2 and the averaged profile, when hyperparameters change the
  privacy of a run;
* [`mixture`][privselect.selection.bounds.mixture]: K released with every run (a mixture of k-fold compositions).

[`registry`][privselect.selection.bounds.registry] is the one table (K law, family) -> theorem that
[`certify`][privselect.selection.certify.certify] consults. Importing this package registers every family.
The bounds never import ``certify``: ``certify`` composes them into certificates.
"""

from .registry import (  # noqa: I001
    LawBound,
    applicable_bound,
    law_bound,
    register_bound,
    registered_bounds,
    unsupported_reason,
)
from .profile import SelectionShift, selection_epsilons, selection_profile, selection_shift, selection_shifts
from .rdp import rdp_selection_epsilon, selection_rdp_curve, supports_rdp_selection
from .cor62 import (COR62, EPS_Q_RANGE, Cor62Thresholds, all_meet, cor62_thresholds, meets_thresholds,
                    smallest_cor62_base_epsilon)
from .mixture import K_MIXTURE, KMixtureCurve, k_mixture_profile

__all__ = [
    "LawBound", "law_bound", "applicable_bound", "register_bound", "registered_bounds", "unsupported_reason",
    "SelectionShift", "selection_profile", "selection_shift", "selection_shifts", "selection_epsilons",
    "rdp_selection_epsilon", "selection_rdp_curve", "supports_rdp_selection",
    "COR62", "EPS_Q_RANGE", "Cor62Thresholds", "all_meet", "cor62_thresholds", "meets_thresholds",
    "smallest_cor62_base_epsilon",
    "K_MIXTURE", "KMixtureCurve", "k_mixture_profile",
]
