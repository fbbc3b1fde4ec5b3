"""Characteristic-function (phi) accountant with a certified, added error bound.

Zhu, Dong, Wang, "Optimal Accounting of Differential Privacy via Characteristic Function",
AISTATS 2022 (the paper's "Analytical Fourier Accountant"), evaluated with the shifted-contour
inversion of accounting-cf.md §7 instead of the paper's Gil-Pelaez quadrature.

What is computed
----------------
For one neighbouring direction (remove or add; symmetric mechanisms have one), the composed
privacy loss ``L`` is the sum of independent component losses (``composed_losses``), and

    delta(eps) = P[L = inf] + E_P[(1 - e^{eps - L})_+; L finite]                     (every real eps)

(accounting-cf.md §1.1, §2.6). The masses at +inf compose as ``m = 1 - prod (1 - m_i)^{k_i}``;
the finite part is the sub-probability law whose phi is ``Phi = prod phi_i^{k_i}`` (Zhu, Dong,
Wang 2022, Prop. 12 (000) / 13 (002), Prop. 37/38). `PrivacyProfile`
takes the maximum over the directions at query time.

The finite part is split into its *atomic* part ``A`` (the product of the components' atomic
parts: randomized response, pure DP, the end points of a Laplace loss, ...) and the rest
``R``, which is absolutely continuous whenever some component has a continuous part.

* ``delta_A(eps) = sum_a p_a (1 - e^{eps - a})_+`` is summed exactly over the enumerated atoms
  (binomial masses for each component; pruned atoms, if any, only add to the upper bound).
* ``delta_R`` is inverted along the line ``Im z = v > 0`` (accounting-cf.md §7):

      delta_R(eps) = (1/pi) int_0^inf Re[ e^{i z eps} Phi_R(-z) / (i z (i z - 1)) ] du,
      z = u + i v,  Phi_R(-z) = E_R[e^{(v - iu) L}],  Phi_R = Phi - Phi_A,

  with the trapezoid rule of step ``Delta`` on ``0 <= u <= U``. ``v`` is taken from the grid
  ``2^{j/4}`` at the minimum of the saddle function ``-v eps + log M(v) - log v - log(1 + v)``
  (``M`` the composed moment generating function); the integrand is then non-oscillatory
  near u = 0 and ``delta`` keeps full relative precision down to ~1e-250. Phi-values on a
  (v, u)-grid are cached, so many eps queries cost one small matrix product.

Certified error (added: ``upper = estimate + error``, ``lower = estimate - error``)
-----------------------------------------------------------------------------------
(a) *Aliasing.* By Poisson summation the infinite trapezoid sum equals
    ``sum_j e^{2 pi v j / Delta} delta_R(eps + 2 pi j / Delta)``. The terms j != 0 are >= 0, so
    the trapezoid over-estimates delta_R: nothing is added to the upper bound. For the lower
    bound they are bounded by Chernoff: ``delta_R(s) <= C(w) M(w) e^{-w s}`` with
    ``C(w) = sup_{x>=0} (1 - e^{-x}) e^{-w x} = (w/(1+w))^w / (1+w)``, using some ``w > v``
    for j > 0 and ``w < v`` (or the total mass) for j < 0 (geometric sums); the j > 0 terms
    vanish exactly when ``eps + 2 pi / Delta`` exceeds the top of the support.
(b) *Truncation* at ``U``: the omitted trapezoid terms are bounded by
    ``(1/pi) e^{-v eps} int_U^inf E(u) / u^2 du`` with the envelope
    ``E(u) = prod (A_i(v) + G_i(u))^{k_i} - prod A_i(v)^{k_i}`` >= |Phi_R(-z)|, where ``A_i`` is the
    tilted atomic mass and ``G_i(u)`` a non-increasing bound on the component's continuous
    part (``PrivacyLoss.log_fourier_envelope``: exact for the Gaussian; a total-variation bound
    TV/|u| for Laplace and subsampled losses). The integral is bounded on geometric panels
    using monotonicity. ``Delta`` and ``U`` are sized so (a) and (b) stay below ``rel_tol``
    of the saddle-point magnitude; the reported terms are evaluated at each eps.
(c) *Rounding.* Each phi value carries an absolute error bound (from the magnitude of the
    computed logs and phases); the composed bound is
    ``prod (|phi_i| + e_i)^{k_i} - prod |phi_i|^{k_i}`` plus the rounding of ``exp(sum k log)``;
    sums are blocked, so an accumulation of N terms in any order costs at most
    ``(sqrt N + N / sqrt N + 8) eps_mach sum|terms|`` (quadrature sums: chunks of 1024), plus
    the phase error ``2 eps_mach |u eps|``; the atomic sum adds the rounding of its masses,
    of its suffix sums and of ``eps - a``.
(d) *Quadrature of phi for subsampled mechanisms* (no closed form). Gaussian base: a
    truncated trapezoid rule in the standard-normal variable whose error is *proven*: the
    omitted nodes are bounded by the rule's Gaussian tail bounds, and the aliasing error of the
    infinite rule by Trefethen, Weideman 2014 (SIAM Review), Thm 5.1, on the strip
    ``|Im x| < pi / (3 mu)`` where the integrand grows at most by ``C e^{b^2/2 + |u| mu b}``
    (``ContinuousQuadrature.aliasing_relative``); the step is chosen so this is below e^-40 of
    the tilted mass. Laplace base: composite Gauss-Legendre, whose two-rule difference times
    ``quadrature_safety`` (default 10) is only an *estimate*; such profiles report
    ``certified = False`` (``PrivacyProfile.certified``), so "auto" never certifies with them.
    The term is reported as ``phi_quadrature_rel`` (proven) or ``phi_quadrature_estimate_rel``
    in ``ErrorBudget.details``. All other terms are bounds (up to the accuracy of the special
    functions involved).
(e) Where even the Chernoff bound ``C(v) M(v) e^{-v eps}`` is below ``MIN_DELTA`` (e.g. eps
    just below the top of a bounded loss), it replaces the contour integral as the upper
    bound (``chernoff_tail``) and the lower bound is the trivial one.

``ErrorBudget.details`` reports each term relative to delta (maximum over three reference
points delta ~ 1e-2, 1e-5, 1e-10); ``delta_error`` is the widest bracket there and
``eps_error`` the matching eps width.

Cost and limits: Gaussian and randomized-response compositions need grids of tens to hundreds
of points; DP-SGD (q = 256/60000, sigma = 1.1, T = 14063) a few thousand, about 0.3 s per
eps(delta). Laplace-type and subsampled losses decay only like TV/u, so grids are longer
(capped by ``max_grid_points`` and ``max_work``); for one or a few subsampled steps with a
tiny rate, or a small total loss, the certified truncation term can then dominate (brackets of
1e-6 .. 1e-1 relative) -- still valid, and tightened by raising ``max_work``.
"""

from .accountant import CF, CFAccountant, cf_profile
from .curve import CFCurve
from .quadrature import MIN_DELTA

__all__ = ["CFAccountant", "CFCurve", "cf_profile", "MIN_DELTA", "CF"]
