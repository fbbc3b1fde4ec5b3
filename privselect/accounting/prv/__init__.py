"""PRV accountant: numerical composition of privacy random variables with a certified bracket.

Gopi, Lee, Wutschitz 2021 ("Numerical Composition of Differential Privacy", GLW), with the
numbering of ``design/accounting-prv-fdp.md``. Per neighbouring direction (``remove``,
``add``; computed once for symmetric mechanisms) the accountant

1. truncates each distinct privacy-loss law Y_i (the primary law of
   `plrv`, GLW's PRV Y) to a range of whole cells and conditions
   on it (GLW Alg. 2; TV cost ``eta1 = sum_i k_i P[Y_i outside]``, Lemma C.1 + TV lemma);
2. discretises it on the common lattice ``h Z`` with cell-centred cells ``(c - h/2, c + h/2]``
   whose masses are exact CDF differences (``cdf`` below the median, ``sf`` above it), and
   shifts the lattice by ``mu_i`` so that the mean is preserved (GLW Alg. 2, Lemma C.5);
3. composes all components at once by FFT: one ``rfft`` per distinct law, the spectra raised
   to their counts and multiplied, one ``irfft`` (circular convolution on a window chosen
   from a Chernoff bound, GLW App. C.2 "eta2 ... through moment generating functions");
4. answers ``delta(eps)`` and ``eps(delta)`` from suffix sums of the composed pmf with exact
   in-cell inversion, vectorised, and brackets the truth with GLW eq. (8).

Error analysis. The constants are recomputed from the actual discretisation, so the
reported [`ErrorBudget`][privselect.accounting.ErrorBudget] is what was achieved (never more than requested):

* Coupling (GLW Lemma 5.3, sharpened). ``e_i = Y_i - Y~_i`` lies in an interval of length h,
  has mean ``beta_i`` with ``|beta_i| <= mean_error_i`` and ``Var e_i <= E(Y_i - c(Y_i))^2``;
  the latter is bounded from sub-cell CDF values of the 2048 heaviest cells (h^2/4 for the
  rest; atoms exactly). Then ``P[|sum (e_i - beta_i)| > s] <= eta0`` with s the smaller of
  Hoeffding's width (GLW Thm 5.5's mesh rule) and Bennett's (Boucheron, Lugosi, Massart 2013,
  Thm 2.9), and ``eps_error = s + sum k_i mean_error_i``. The cell variance is ~h^2/10
  instead of Hoeffding's h^2/4, so the mesh is ~1.6x coarser for the same eps_error.
  The shift carries the atoms' offsets exactly; the continuous part's offset is proven to be
  at most ``h^2 TV(f) / 8`` (``PrivacyLoss.continuous_variation``: per cell,
  ``int (y - c) f = int_0^{h/2} t (f(c+t) - f(c-t)) dt`` and the bracket is at most the
  density's variation over the cell), which is ``mean_error_i`` (no quadrature estimate).
* Truncation ``eta1 = sum k_i P[Y_i outside its cells]`` (exact tails, TV lemma) and
  wrap-around ``eta2`` (Chernoff bound on the discretised sum, exact at the chosen orders).
  On the event that neither truncation, coupling nor wrap-around fails, the composed loss
  is within ``eps_error`` of the computed one, so GLW Lemma 5.2 gives eq. (8) with
  ``delta_error = eta0 + eta1 + eta2 + fp`` (each failure counted once by the union bound).
* Floating point ``fp``, a bound on the change of any delta~(eps):
  (i) cell masses: CDF values with absolute error ``<= 64 u max|F|`` (an assumption on
  `plrv`'s CDFs); delta~ is linear in each factor with a monotone [0, 1] weight, so
  summation by parts gives ``~10 max|dF|`` per factor, times K (hybrid argument);
  (ii) FFT: componentwise forward error ``<= 10 u log2(n)`` per output (one relative error
  per radix stage; Higham 2002, Sec. 24.1), amplified by the powering to
  ``sum k_i |dP| prod (|P| + e)^(k-1)``, the rounding of ``exp(sum k log P)``, the dropped
  (below 1e-60) spectrum and the inverse FFT, turned into an l1 bound by Parseval.
  ``min_delta = max(delta_error, 10 fp)``: eps(delta) below it raises CertificationError.
* Mass at +inf (ApproxDP) is carried as ``Pi = prod (1 - inf_i)^(k_i)`` (GLW Sec. 4):
  ``delta(eps) = 1 - Pi + Pi delta_finite(eps)``.
"""

from ...errors import UnsupportedMechanismError
from .accountant import PRV, PRVAccountant, prv_profile
from .curve import PRVCurve

__all__ = ["PRVAccountant", "PRVCurve", "prv_profile", "UnsupportedMechanismError", "PRV"]
