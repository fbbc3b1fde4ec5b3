"""Renyi-DP curves of the mechanism descriptions and RDP -> (eps, delta) conversions.

RDP is an upper-bound-only accountant here: it serves as a baseline and to size the PRV
domain (Gopi, Lee, Wutschitz 2021, Remark 5.6). Every curve is the worst case over both
neighbouring directions, ``max(D_a(M(X) || M(X')), D_a(M(X') || M(X)))``, and composes by
addition (Mironov 2017, Prop. 1).

Conventions follow `privselect.accounting.plrv`: ``Gaussian(s, sensitivity)`` has
``mu = sensitivity / s`` and ``Laplace(b, sensitivity)`` has ``eps0 = sensitivity / b``.

Curves (``rdp_curve``), for orders ``a > 1``:

* Gaussian: ``a mu^2 / 2`` (Mironov 2017, Prop. 7).
* Laplace: Mironov 2017, Prop. 6, evaluated without cancellation.
* RandomizedResponse, PureDP (= RR with ``p = e^eps / (1 + e^eps)``), ApproxDP with
  ``delta == 0``: the exact RDP of binary randomized response. It dominates every
  eps-DP pair (Kairouz, Oh, Viswanath 2015), so it is also valid for PureDP.
  ApproxDP with ``delta > 0`` has infinite RDP.
* PoissonSubsampled(Gaussian): exact (Mironov, Talwar, Zhang 2019): the finite binomial
  sum for integer orders (Sec. 3.2), and for fractional orders their split of ``A_a`` at
  ``z0`` into two binomial series (Sec. 3.3), summed with signs and with the alternating
  tails accelerated with a certified error bound (see ``_sgm_log_a_minus_1_frac``).
  Their Thm 5 (the remove direction dominates) gives the worst case over directions.
* PoissonSubsampled(RR / PureDP / Laplace): the exact RDP, in both directions, of
  subsampled randomized response with the base's pure-DP eps0. A Laplace base is an
  eps0-DP post-processing of RR, so this is a valid (not tight) bound for it.
* SampledWithoutReplacement(base): the base's replace-one description (``replace_one_base``);
  Zhu, Dong, Wang 2022, Thm 11(2) gives the dominating pairs ``(P, (1-g)P + gQ)`` and
  their swap, which for the symmetric bases here are reflections of the Poisson pairs.
  A dominating pair for every hockey-stick divergence dominates in the Blackwell order,
  hence in every Renyi divergence, so the Poisson curve at the same rate applies.
* Composition: ``sum(count * curve)``.

Conversions (``epsilon_from_rdp``, ``delta_from_rdp``) minimise over the given orders
where the curve is finite; see their docstrings for the three rules.
"""

from .accountant import RDP, RdpCurve, rdp_profile
from .conversions import CONVERSIONS, delta_from_rdp, epsilon_from_rdp, rdp_delta, rdp_epsilon
from .curves import DEFAULT_ORDERS, rdp_curve, unsupported_part

__all__ = ["DEFAULT_ORDERS", "CONVERSIONS", "rdp_curve", "unsupported_part", "epsilon_from_rdp",
           "delta_from_rdp", "rdp_epsilon", "rdp_delta", "rdp_profile", "RdpCurve", "RDP"]
