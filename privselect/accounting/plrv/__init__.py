"""Privacy-loss random variables (PLRVs) of each mechanism, in both neighbouring directions.

Convention (Zhu, Dong, Wang 2022, Def. 4 and 11): for one ordered pair (P, Q) of output
distributions on neighbouring data sets, the privacy loss is ``L = log(p(o) / q(o))``. A
`PrivacyLoss` describes the law of ``L`` under ``P`` (the *primary* law) and under
``Q`` (the *secondary* law). The hockey-stick divergence of the pair is

    delta(eps) = H_{e^eps}(P || Q) = P[L = inf] + E_P[(1 - e^{eps - L})_+]      (every real eps)

which needs only the primary law. In Gopi, Lee, Wutschitz (2021) notation, the primary law is
that of their PRV ``Y`` and the secondary law that of ``X``.

Every non-composite mechanism has two directions (`DirectedLosses`): ``remove`` and
``add``. For symmetric mechanisms both are the same object. Subsampled mechanisms follow
Zhu, Dong, Wang (2022), Thm 11: with base pair (P, Q) and rate q,

* remove: the pair ((1-q) Q + q P, Q), loss ``g(L_b) = log(1 - q + q e^{L_b})``;
* add:    the swapped pair (Q, (1-q) Q + q P), loss ``-g(L_b)`` with ``L_b ~ Q``.

Composition never mixes directions: accountants compose each direction separately and take
the maximum at query time.
"""

from ...errors import UnsupportedMechanismError
from .directions import (
                         DirectedLosses,
                         check_double_range,
                         composed_losses,
                         out_of_double_range,
                         privacy_losses,
                         readable_losses,
)
from .gaussian import GaussianLoss
from .laplace import LaplaceLoss
from .loss import Atoms, PrivacyLoss
from .subsampled import SubsampledLoss, subsampled_loss
from .two_point import TwoPointLoss

__all__ = ["PrivacyLoss", "Atoms", "GaussianLoss", "LaplaceLoss", "TwoPointLoss", "SubsampledLoss", "DirectedLosses",
           "privacy_losses", "composed_losses", "UnsupportedMechanismError", "subsampled_loss",
           "out_of_double_range", "check_double_range", "readable_losses"]
