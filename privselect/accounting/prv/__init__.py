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
reported [`ErrorBudget`][privselect.accounting.prv.ErrorBudget] is what was achieved (never more than requested):

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

from __future__ import annotations

import logging
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import scipy.fft

from ... import _validation as check
from ...mechanisms import Mechanism
from ..plrv import PrivacyLoss, UnsupportedMechanismError, composed_losses
from ..profile import CertificationError, DirectionalCurve, ErrorBudget, PrivacyProfile

__all__ = ["PRVAccountant", "PRVCurve", "prv_profile", "UnsupportedMechanismError"]

logger = logging.getLogger(__name__)

_U = np.finfo(float).eps / 2  # unit roundoff of IEEE double
#: Assumed accuracy of ``PrivacyLoss.cdf``/``sf``: absolute error <= _CDF_ULPS * u * max|F|.
_CDF_ULPS = 64.0
#: Per radix stage relative error of pocketfft's butterflies (radices 2, 3, 4, 5; twiddles incl.).
_FFT_STAGE_ULPS = 10.0
#: Spectrum entries with |P|^k below this are set to 0 (their total effect is added to fp).
_SPECTRUM_FLOOR = 1e-60
#: Sub-cells per cell for the variance bound, and how many of the heaviest cells get them.
_SUBCELLS = 16
_REFINED_CELLS = 2048

#: Smallest floating-point error bound one composition adds to the delta bracket: the cell
#: masses of every step are normalised with relative error >= (log2(cells + 1) + 22) u, one
#: cell at least (see `_pmf_error`; hybrid argument over the steps).
_FP_PER_COMPOSITION = (math.log2(2) + 22) * _U
#: Largest total number of compositions: beyond it the floating-point part of delta_error alone
#: is >= 1, so every delta bound is the trivial 1 and no epsilon can be certified (3.9e14).
MAX_COMPOSITIONS = int(1 / _FP_PER_COMPOSITION)

#: Documented ranges of the accuracy options (``PRVAccountant``), all in double precision:
#: eps_error / rel_eps_error >= machine epsilon (a smaller slack is below the rounding of an
#: epsilon of order 1; relative accuracy below it is not representable); eps_error <= log of
#: the largest double (~709.8: an additive slack beyond it makes the bracket vacuous, e^eps
#: overflows); target_delta, delta_error >= 1e-300 (far below the floating-point floor ~1e-14
#: of any PRV bracket, and the internal splits delta_error / 8 / MAX_COMPOSITIONS of the
#: default delta_error = target_delta / 1000 stay positive doubles: ~3e-319 > 5e-324).
EPS_ERROR_RANGE = (float(np.finfo(float).eps), math.log(sys.float_info.max))
REL_EPS_ERROR_RANGE = (float(np.finfo(float).eps), 1.0)  # [lo, 1)
#: When the first build at rel_eps_error needs more than max_points points, it is retried at this
#: relative accuracy (then refined as far as max_points allows).
_FALLBACK_REL_EPS_ERROR = 1.5e-3
DELTA_OPTION_MIN = 1e-300  # target_delta and delta_error in [DELTA_OPTION_MIN, 1)
#: Largest privacy loss (in absolute value, after truncation) of one step: squares of cell
#: offsets (at most the loss range) summed over up to MAX_COMPOSITIONS steps stay finite.
MAX_STEP_LOSS = math.sqrt(sys.float_info.max) / MAX_COMPOSITIONS
#: Compose in long double when target_delta < this x the number of compositions.
_EXTENDED_BELOW_PER_STEP = 5e-12
#: Largest FFT size the relative refinement aims for (unless the first build was larger).
_REFINE_POINTS = 1 << 20
#: Smallest eps scale the relative refinement sizes eps_error from (answers of exactly 0).
_MIN_EPS_SCALE = 1e-9



# ----------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------


def readable_losses(mechanism: Mechanism):
    """The mechanism's PLRVs (no numerics); raises UnsupportedMechanismError naming the failing part.

    The registry's "prv" accountant runs this as its dry walk (``supports``).
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"expected a privselect Mechanism, got {type(mechanism).__name__}")
    try:
        parts = composed_losses(mechanism)
    except UnsupportedMechanismError as exc:
        raise UnsupportedMechanismError(f"PRV accountant cannot interpret {mechanism!r}: {exc}") from None
    for losses, _ in parts:
        for loss in (losses.remove, losses.add):
            if not isinstance(loss, PrivacyLoss):
                raise UnsupportedMechanismError(f"PRV accountant: {type(loss).__name__} is not a PrivacyLoss")
    return parts


@dataclass(frozen=True)
class PRVAccountant:
    """PRV accountant (Gopi, Lee, Wutschitz 2021) with a certified two-sided bracket.

    Both neighbouring directions are composed separately (remove: GLW App. B.2's pair
    ``(P0, (1-q) P0 + q P1)``, add: its swap) and the profile takes their maximum at query
    time; symmetric mechanisms are computed once.

    At most `MAX_COMPOSITIONS` (~3.9e14) compositions in total: the floating-point error
    bound grows by at least 23 u (~2.6e-15) per composition, so beyond that count every delta
    bound is 1 (in practice the floor reaches delta ~ 1e-5 near 1e8 compositions).

    Examples
    --------
    >>> import privselect as ps
    >>> step = ps.Gaussian(1.1).poisson_subsample(256 / 60000)
    >>> prof = PRVAccountant().profile(step.compose(1000))
    >>> lower, upper = prof.epsilon_bounds(1e-5)   # certified bracket on eps(1e-5)
    >>> bool(0.0 < lower < upper < lower + 0.01)
    True

    Parameters
    ----------
    eps_error:
        Additive eps slack of the bracket (GLW eq. (8)); the achieved value (reported in the
        profile's [`ErrorBudget`][privselect.accounting.prv.ErrorBudget]) never exceeds it. ``None``: ``rel_eps_error`` times
        an RDP upper bound on eps(``target_delta``) (at least 0.1), which keeps the relative
        accuracy and the cost roughly independent of the mechanism. Range: [2.2e-16 (machine
        epsilon), 709.78 (log of the largest double)].
    delta_error:
        Additive delta slack for truncation, coupling and wrap-around (GLW Thm 5.5's
        ``delta_err``); floating-point error is added on top. ``None``: ``target_delta / 1000``.
        Range: [1e-300, 1).
    target_delta:
        The delta the profile will mostly be queried at; sets the defaults above. Range:
        [1e-300, 1) (queries below the profile's floating-point floor, ~1e-14 and growing
        with the number of compositions, raise ``CertificationError``).
    rel_eps_error:
        Relative eps accuracy used when ``eps_error`` is None. Range: [2.2e-16, 1).
    max_points:
        Largest FFT size (memory guard); a larger requirement raises ``ValueError``.

    """

    eps_error: float | None = None
    delta_error: float | None = None
    target_delta: float = 1e-5
    rel_eps_error: float = 5e-4
    max_points: int = 1 << 24

    def __post_init__(self) -> None:
        if self.eps_error is not None:
            lo, hi = EPS_ERROR_RANGE
            object.__setattr__(self, "eps_error", check.in_range("eps_error", self.eps_error, lo, hi))
        if self.delta_error is not None:
            object.__setattr__(self, "delta_error",
                               check.in_range("delta_error", self.delta_error, DELTA_OPTION_MIN, 1.0, high_open=True))
        object.__setattr__(self, "target_delta",
                           check.in_range("target_delta", self.target_delta, DELTA_OPTION_MIN, 1.0, high_open=True))
        lo, hi = REL_EPS_ERROR_RANGE
        object.__setattr__(self, "rel_eps_error",
                           check.in_range("rel_eps_error", self.rel_eps_error, lo, hi, high_open=True))
        max_points = check.positive_int("max_points", self.max_points)
        if max_points < 1024:
            raise ValueError(f"max_points must be >= 1024, got {self.max_points!r}")
        object.__setattr__(self, "max_points", max_points)

    # -- build -------------------------------------------------------------------------

    def profile(self, mechanism: Mechanism) -> PrivacyProfile:
        """Certified [`PrivacyProfile`][privselect.accounting.prv.PrivacyProfile] (method ``"prv"``): both directions, max at query time."""
        start = time.perf_counter()
        parts = readable_losses(mechanism)
        total = sum(count for _, count in parts)
        if total > MAX_COMPOSITIONS:
            raise ValueError(
                f"the PRV accountant supports at most {MAX_COMPOSITIONS:.3g} compositions, got "
                f"{_count_text(total)}: its floating-point error bound grows by at least "
                f"{_FP_PER_COMPOSITION:.2g} per composition, so every delta bound would be 1 (and the smallest "
                "certifiable delta exceeds 1e-5 from ~1e8 compositions on); use fewer compositions (k, steps, "
                "rounds) or accountant='rdp' or the default accountant='auto'")
        delta_error = self.delta_error if self.delta_error is not None else self.target_delta / 1000
        symmetric = all(losses.is_symmetric for losses, _ in parts)
        eps_target, eps_source = self._eps_target(mechanism, parts, symmetric)
        directions = ("both",) if symmetric else ("remove", "add")
        components = {d: [(getattr(losses, "remove" if d == "both" else d), count) for losses, count in parts]
                      for d in directions}
        # double precision's floating-point floor is ~5e-14 per composition (FFT error amplified by
        # the powering): compose in long double where it would exceed 1% of target_delta
        extended = self.target_delta < _EXTENDED_BELOW_PER_STEP * total

        def build(eps_wanted: float) -> list[PRVCurve]:
            return [_build_curve(components[d], d, eps_wanted, delta_error, self.max_points, extended)
                    for d in directions]

        try:
            curves = build(eps_target)
        except ValueError:  # too many points at the relative default: a coarser pilot, refined below
            coarser = eps_target * _FALLBACK_REL_EPS_ERROR / self.rel_eps_error
            if self.eps_error is not None or coarser <= eps_target:
                raise
            eps_target = coarser
            curves = build(eps_target)
        if self.target_delta < max(c.error_budget.min_delta for c in curves):
            # the double-precision floor is above the target: compose in long double instead
            extended = True
            curves = build(eps_target)
        if self.eps_error is None:
            # Size the slack relative to the answer: the scale above is an upper bound on
            # eps(target_delta) that can be far too large (RDP conversion of a small loss, the
            # 0.1 floor); rebuild at rel_eps_error times the estimate read off this build.
            first_points = max(c.n for c in curves)
            for _ in range(3):
                # the answer at target_delta, or one decade above it where that is smaller (and > 0):
                # queries near target_delta keep ~rel_eps_error relative accuracy
                estimate = max(float(np.abs(c.epsilon_estimate(self.target_delta))) for c in curves)
                above = max(float(c.epsilon_estimate(min(10 * self.target_delta, 0.5))) for c in curves)
                if 0 < above < estimate:
                    estimate = above
                wanted = self.rel_eps_error * max(estimate, _MIN_EPS_SCALE)
                # the cost grows like 1/eps_error: at most _REFINE_POINTS points (or 8x the first build)
                points = max(c.n for c in curves)
                wanted = max(wanted, eps_target * points / max(8 * first_points, _REFINE_POINTS))
                if not (math.isfinite(estimate) and wanted < 0.5 * eps_target):
                    break
                try:
                    curves = build(wanted)
                except ValueError as exc:  # too many points: keep the coarser (still certified) build
                    logger.debug("prv: relative refinement to eps_error=%.3g declined (%s)", wanted, exc)
                    break
                eps_target, eps_source = wanted, f"{self.rel_eps_error:g} x eps estimate({self.target_delta:g})"
        seconds = time.perf_counter() - start
        logger.debug("prv profile (%d compositions, %d distinct) built in %.3fs", total, len(parts), seconds)
        return PrivacyProfile(
            curves=tuple(curves),
            accountant="prv",
            mechanism=mechanism,
            description=(f"PRV accountant (Gopi, Lee, Wutschitz 2021), {total} compositions, "
                         f"eps_error <= {eps_target:.3g}, delta_error ~ {delta_error:.3g}"),
            metadata=(
                ("compositions", total),
                ("distinct_components", len(parts)),
                ("eps_error_requested", eps_target),
                ("eps_error_source", eps_source),
                ("delta_error_requested", delta_error),
                ("target_delta", self.target_delta),
                ("build_seconds", seconds),
                ("float", "longdouble" if extended else "float64"),
            ),
        )

    def _eps_target(self, mechanism: Mechanism, parts, symmetric: bool) -> tuple[float, str]:
        if self.eps_error is not None:
            return self.eps_error, "given"
        scale, source = _epsilon_scale(mechanism, parts, symmetric, self.target_delta)
        return self.rel_eps_error * max(scale, 0.1), f"{self.rel_eps_error:g} x eps_{source}({self.target_delta:g})"


def _count_text(count: int) -> str:
    """A composition count for messages (Python ints may exceed the float range)."""
    digits = str(count)
    return digits if len(digits) <= 15 else f"~{digits[0]}.{digits[1:3]}e{len(digits) - 1}"


def prv_profile(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    """Certified privacy profile of ``mechanism`` from [`PRVAccountant`][privselect.accounting.prv.PRVAccountant] (``options`` go to it)."""
    return PRVAccountant(**options).profile(mechanism)


class PRVCurve(DirectionalCurve):
    """Composed PRV of one direction on a uniform grid, answering vectorised queries.

    ``t_m = t0 + m h`` carries the finite-part pmf ``p_m``. Stored: ``D2_m = sum_{j>=m} p_j
    e^{t_m - t_j}`` (backward recurrence) and ``W_m = delta~(t_m) = (1 - e^{-h}) sum_{j>m} D2_j``,
    both sums of non-negative terms, so ``delta~(eps) = W_m - expm1(eps - t_m) D2_m`` on
    ``[t_{m-1}, t_m]`` keeps relative accuracy down to the smallest deltas (GLW eq. (5)).
    """

    def __init__(self, *, direction: str, t0: float, h: float, pmf: np.ndarray, log_finite: float,
                 eps_error: float, delta_error: float, error_budget: ErrorBudget, rel_error: float = 0.0,
                 top: float = math.inf) -> None:
        self.direction = direction
        self.error_budget = error_budget
        self.t0 = float(t0)
        self.h = float(h)
        self.n = int(pmf.size)
        self.eps_error = float(eps_error)
        self.delta_error = float(delta_error)
        self.rel_error = float(rel_error)  # relative floating-point error of delta~ (cell masses, sums)
        # sum of the steps' largest finite losses: the finite part of delta(eps) is 0 from there on
        self.top = float(top)
        self.log_finite = float(log_finite)  # log Pi: probability that every loss is finite
        self.finite = math.exp(log_finite)
        self.inf_part = -math.expm1(log_finite)  # 1 - Pi
        r = math.exp(-h)
        d2 = _discounted_suffix_sums(pmf, h)
        suffix = np.cumsum(d2[::-1])[::-1]
        w = np.empty_like(d2)
        w[:-1] = -math.expm1(-h) * suffix[1:]
        w[-1] = 0.0
        self._d2 = np.ascontiguousarray(d2)
        self._w = np.ascontiguousarray(w)
        self._neg_w = -self._w
        self.total_mass = float(w[0] + d2[0])

    # -- finite part -----------------------------------------------------------------------

    def _delta_finite(self, eps: np.ndarray) -> np.ndarray:
        """delta~(eps) of the finite part: exact for the grid pmf, every real eps."""
        e = np.asarray(eps, dtype=float)
        with np.errstate(invalid="ignore", over="ignore"):
            idx = np.ceil((e - self.t0) / self.h)
        idx = np.clip(np.nan_to_num(idx, nan=0.0, posinf=self.n, neginf=0.0), 0, self.n).astype(np.intp)
        inside = idx < self.n
        safe = np.minimum(idx, self.n - 1)
        t = self.t0 + safe * self.h
        with np.errstate(over="ignore", invalid="ignore"):
            val = self._w[safe] - np.expm1(np.minimum(e - t, 0.0)) * self._d2[safe]
        val = np.where(np.isneginf(e), self.total_mass, val)
        return np.where(inside, val, 0.0)

    def _epsilon_finite(self, x: np.ndarray) -> np.ndarray:
        """inf{eps : delta~(eps) <= x} for the finite part (-inf if x >= total mass, +inf if x < 0)."""
        x = np.asarray(x, dtype=float)
        idx = np.searchsorted(self._neg_w, -x, side="left")  # first m with W_m <= x
        idx = np.minimum(idx, self.n - 1)
        d2 = self._d2[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (self._w[idx] - x) / d2
            eps = self.t0 + idx * self.h + np.log1p(np.maximum(ratio, -1.0))
        eps = np.where(d2 > 0, eps, self.t0 + idx * self.h)
        eps = np.where(x >= self.total_mass, -np.inf, eps)
        return np.where(x < 0, np.inf, eps)

    # -- DirectionalCurve ------------------------------------------------------------------

    def delta_estimate(self, eps):
        """Point estimate delta~(eps) (not a bound); the finite part is 0 from ``top`` on."""
        e = np.asarray(eps, dtype=float)
        return self.inf_part + self.finite * np.where(e >= self.top, 0.0, self._delta_finite(e))

    def delta_bounds(self, eps):
        """GLW eq. (8): delta~(eps + eps_err) - delta_err <= delta(eps) <= delta~(eps - eps_err) + delta_err."""
        e = np.asarray(eps, dtype=float)
        grow = 1.0 + self.rel_error
        low = self._delta_finite(e + self.eps_error) / grow - self.delta_error
        up = self._delta_finite(e - self.eps_error) * grow + self.delta_error
        up = np.where(e >= self.top, 0.0, up)  # the composed loss never exceeds top
        lower = self.inf_part + self.finite * np.clip(low, 0.0, 1.0)
        upper = self.inf_part + self.finite * np.clip(up, 0.0, 1.0)
        return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)

    def epsilon_bounds(self, delta):
        """GLW eq. (8) for eps: eps~(delta + delta_err) - eps_err <= eps(delta) <= eps~(delta - delta_err) + eps_err."""
        d = np.asarray(delta, dtype=float)
        x = self._finite_delta(d)
        grow = 1.0 + self.rel_error
        lower = self._epsilon_finite((x + self.delta_error) * grow) - self.eps_error
        upper = self._epsilon_finite((x - self.delta_error) / grow) + self.eps_error
        upper = np.where(x > 0, np.minimum(upper, self.top), upper)  # delta(top) = mass at +inf
        lower = np.minimum(lower, upper)
        below_inf = d < self.inf_part
        return np.where(below_inf, np.inf, lower), np.where(below_inf, np.inf, upper)

    def epsilon_estimate(self, delta):
        """Point estimate eps~(delta) (not a bound)."""
        d = np.asarray(delta, dtype=float)
        x = self._finite_delta(d)
        eps = self._epsilon_finite(x)
        eps = np.where(x > 0, np.minimum(eps, self.top), eps)
        return np.where(d < self.inf_part, np.inf, eps)

    def _finite_delta(self, d: np.ndarray) -> np.ndarray:
        """delta of the finite part that gives total delta d (-1 where d is below the mass at infinity)."""
        if self.finite == 0:
            return np.full(d.shape, -1.0)
        return (d - self.inf_part) / self.finite

    @property
    def grid(self) -> np.ndarray:
        """The composed grid t_m (finite part)."""
        return self.t0 + self.h * np.arange(self.n)


def _discounted_suffix_sums(pmf: np.ndarray, h: float) -> np.ndarray:
    """D2_m = sum_{j >= m} p_j e^{-(j - m) h}, by blocks of B cells with B h <= 16.

    Inside a block, D2 = e^{m h} * (suffix sum of p_j e^{-j h}) with local indices (factors within
    e^{+-16}); the blocks are joined from the right by D2_start = local + e^{-B h} D2_next. All terms
    are non-negative: relative rounding (B + 4) u per entry plus u per block.
    """
    n = pmf.size
    block = max(1, min(n, int(16.0 / h)))
    blocks = -(-n // block)
    padded = np.zeros(blocks * block)
    padded[:n] = pmf
    x = padded.reshape(blocks, block)
    j = np.arange(block) * h
    local = np.cumsum((x * np.exp(-j))[:, ::-1], axis=1)[:, ::-1] * np.exp(j)
    out = local.copy()
    decay = np.exp(-j[::-1] - h)  # e^{-(B - i) h}: from entry i to the next block's first entry
    carry = 0.0
    for b in range(blocks - 1, -1, -1):
        out[b] += decay * carry
        carry = out[b, 0]
    return out.reshape(-1)[:n]


# ----------------------------------------------------------------------------------------
# Default eps_error: an RDP scale (rdp.py, GLW Remark 5.6's tool), Chernoff fallback
# ----------------------------------------------------------------------------------------

_SCALE_ORDERS = np.concatenate([1.0 + np.geomspace(0.02, 1.0, 8)[:-1], np.geomspace(2.0, 256.0, 16)])


def _epsilon_scale(mechanism: Mechanism, parts, symmetric: bool, delta: float) -> tuple[float, str]:
    """An upper bound on eps(delta), only used to size ``eps_error`` (any value is valid)."""
    try:
        from .. import rdp

        value = float(rdp.rdp_epsilon(mechanism, delta, orders=_SCALE_ORDERS))
        if math.isfinite(value):
            return value, "rdp"
    except (ImportError, AttributeError, UnsupportedMechanismError, NotImplementedError, ValueError) as exc:
        logger.debug("rdp_epsilon unavailable for the eps scale (%s); using Chernoff", exc)
    directions = ("remove",) if symmetric else ("remove", "add")
    best = 0.0
    for attr in directions:
        best = max(best, _chernoff_epsilon([(getattr(ls, attr), k) for ls, k in parts], delta))
    return best, "chernoff"


def _chernoff_epsilon(components, delta: float) -> float:
    """min_lam (sum k log E[e^{lam Y}] + log(1/delta)) / lam >= eps(delta) of the finite part."""
    lam = np.geomspace(1e-3, 1e3, 61)
    total = np.zeros_like(lam)
    for loss, count in components:
        with np.errstate(all="ignore"):
            lm = np.asarray(loss.log_mgf(lam), dtype=float) - math.log1p(-loss.inf_mass)
        total += count * lm
    with np.errstate(invalid="ignore"):
        eps = (total - math.log(delta)) / lam
    eps = eps[np.isfinite(eps)]
    return float(eps.min()) if eps.size else 1.0


# ----------------------------------------------------------------------------------------
# Discretisation of one law (GLW Alg. 2)
# ----------------------------------------------------------------------------------------


@dataclass
class _Tails:
    """Where one law is truncated, found once (independent of the mesh)."""

    lower: float  # G(lower) <= tau * finite  (or the finite support end)
    upper: float  # S(upper) <= tau * finite
    median: float
    breakpoints: np.ndarray  # atoms and finite support ends


@dataclass
class _Cells:
    """Discretised law: pmf on cells lo..lo+N-1 of the lattice h Z, shifted by ``shift``."""

    loss: PrivacyLoss
    count: int
    lo: int
    pmf: np.ndarray
    shift: float
    tail: float  # P[Y outside the cells | Y finite]
    second_moment: float  # bound on E[(Y - c(Y))^2 | cells]
    mean_error: float  # proven bound on |E[Y - c(Y)] - shift| (density variation)
    pmf_error: float  # absolute part of the per-step rounding bound on delta~ (see _pmf_error)
    pmf_rel_error: float  # relative part
    extra: dict = field(default_factory=dict)


def _first_crossing(fn, level: float, start: float, direction: float) -> float:
    """A point y = start + direction * d (d >= 0) with fn(y) <= level, near the smallest such d.

    ``fn`` is monotone and decreases along ``direction``. Bracket on a geometric ladder, then
    refine the bracket three times on 33-point grids; the returned end satisfies the test.
    """
    offsets = np.concatenate([[0.0], np.geomspace(1e-12, 1e4, 97)])
    ys = start + direction * offsets
    vals = np.asarray(fn(ys), dtype=float)
    ok = np.nonzero(vals <= level)[0]
    if ok.size == 0:
        raise ValueError(f"privacy-loss tail does not fall below {level:.3g} within 1e4 of {start:.6g}")
    k = int(ok[0])
    if k == 0:
        return float(start)
    a, b = ys[k - 1], ys[k]
    for _ in range(3):
        grid = np.linspace(a, b, 33)
        vals = np.asarray(fn(grid), dtype=float)
        j = int(np.nonzero(vals <= level)[0][0]) if (vals <= level).any() else 32
        if j == 0:
            return float(grid[0])
        a, b = grid[j - 1], grid[j]
    return float(b)


def _find_tails(loss: PrivacyLoss, tau: float) -> _Tails:
    """Truncation points with ``P[Y < lower]``, ``P[Y > upper] <= tau`` (given finite) and a median."""
    finite = 1.0 - loss.inf_mass
    lo, hi = loss.support
    median = _median(loss, lo, hi, finite)
    lower = lo if math.isfinite(lo) else _first_crossing(loss.cdf, tau * finite, median, -1.0)
    upper = hi if math.isfinite(hi) else _first_crossing(loss.sf, tau * finite, median, +1.0)
    points = [p for p in (lo, hi) if math.isfinite(p)] + list(np.asarray(loss.atoms().locations, dtype=float))
    return _Tails(lower=float(lower), upper=float(upper), median=float(median),
                  breakpoints=np.unique(np.asarray(points, dtype=float)))


def _median(loss: PrivacyLoss, lo: float, hi: float, finite: float) -> float:
    """A point near the median of the finite part (only steers where cdf or sf is used)."""
    centre = 0.0 if not (math.isfinite(lo) and math.isfinite(hi)) else 0.5 * (lo + hi)
    ladder = np.geomspace(1e-12, 1e4, 97)
    ys = np.unique(np.clip(np.concatenate([centre - ladder, [centre], centre + ladder]), lo, hi))
    for _ in range(4):
        vals = np.asarray(loss.cdf(ys), dtype=float)
        j = int(np.searchsorted(vals, finite / 2))
        j = min(max(j, 1), ys.size - 1)
        ys = np.linspace(ys[j - 1], ys[j], 33)
    return float(ys[-1])


def _edges_values(loss: PrivacyLoss, edges: np.ndarray, split: int) -> tuple[np.ndarray, np.ndarray]:
    """G = cdf at edges[:split+1] and S = sf at edges[split:]."""
    g = np.asarray(loss.cdf(edges[: split + 1]), dtype=float)
    s = np.asarray(loss.sf(edges[split:]), dtype=float)
    return g, s


def _discretise(loss: PrivacyLoss, count: int, h: float, tails: _Tails, max_points: int) -> _Cells:
    """Cell-centred, mean-preserving discretisation on h Z (GLW Alg. 2, Lemma C.5)."""
    finite = 1.0 - loss.inf_mass
    # Cell j is (c_j - h/2, c_j + h/2] with c_j = j h; one extra cell on each side of a finite
    # support end guards against rounding in j = ceil(y/h - 1/2).
    lo_support, hi_support = loss.support
    j_lo = int(math.floor(tails.lower / h + 0.5)) - (1 if math.isfinite(lo_support) else 0)
    j_hi = int(math.ceil(tails.upper / h - 0.5)) + (1 if math.isfinite(hi_support) else 0)
    n_cells = j_hi - j_lo + 1
    if n_cells > max_points:
        raise ValueError(
            f"one {type(loss).__name__} step needs {float(n_cells):.4g} cells of width {h:.3g} (> max_points="
            f"{max_points}); use a larger eps_error or a smaller number of compositions")
    edges = (np.arange(j_lo, j_hi + 2) - 0.5) * h  # n_cells + 1 edges
    # the cell that holds the median goes to the sf side: where the median is an atom at the top of
    # the support (the add direction of a subsampled Laplace), rounding would put every cell on the
    # cdf side, and the rounding bound would become absolute (_pmf_error: 10 c per step)
    split = int(np.clip(math.floor((tails.median - edges[0]) / h), 0, n_cells))
    g, s = _edges_values(loss, edges, split)
    raw = np.empty(n_cells)
    raw[:split] = np.diff(g)
    raw[split:] = -np.diff(s)
    clipped = float(-np.sum(raw[raw < 0]))
    np.maximum(raw, 0.0, out=raw)
    mass = float(raw.sum())  # pairwise summation: relative error <= (log2 N + 20) u
    if not mass > 0:
        raise ValueError(f"{type(loss).__name__}: no probability mass on [{edges[0]:.6g}, {edges[-1]:.6g}]")
    tail = (float(g[0]) + float(s[-1])) / finite
    pmf_rel_error, pmf_error = _pmf_error(g, s, clipped, mass, n_cells)

    # Mean shift (GLW Alg. 2), with a proven error. Per cell, the continuous part contributes
    # b_j = int_0^{h/2} t (f(c + t) - f(c - t)) dt, and |f(c + t) - f(c - t)| <= V_j, the variation
    # of the density f over the cell, so |sum_j b_j| <= (h^2 / 8) TV(f). Atoms contribute exactly
    # p_a (a - c(a)); the shift is their part and mean_error bounds the rest (no quadrature).
    shift_atoms = 0.0
    at = loss.atoms()
    if at.locations.size:
        inside = (at.locations > edges[0]) & (at.locations <= edges[-1])
        cell = np.searchsorted(edges, at.locations[inside], side="left") - 1
        offsets = at.locations[inside] - (j_lo + cell) * h
        shift_atoms = math.fsum(at.primary[inside] * offsets)
    shift = shift_atoms / mass
    variation = float(loss.continuous_variation())
    mean_error = (variation * h * h / 8 + 8 * _U * (abs(shift_atoms) + h)) / mass * (1 + 1e-9)
    if not abs(shift) < h / 2:
        raise ValueError(f"mean shift {shift:.3g} of {type(loss).__name__} is not below h/2 = {h / 2:.3g}; "
                         "the CDF is inaccurate")

    second_moment = _second_moment_bound(loss, edges, g, s, raw, split, h, mass)
    return _Cells(loss=loss, count=count, lo=j_lo, pmf=raw / mass, shift=shift, tail=tail,
                  second_moment=second_moment, mean_error=mean_error, pmf_error=pmf_error,
                  pmf_rel_error=pmf_rel_error)


def _pmf_error(g: np.ndarray, s: np.ndarray, clipped: float, mass: float, n_cells: int) -> tuple[float, float]:
    """(relative, absolute) bound on the change of any composed delta~(eps) per step from rounding.

    Each CDF value carries ``|dF| <= c F`` with ``c = _CDF_ULPS u (1 + |log F|)`` (assumption on
    plrv's CDFs: relative accuracy, degraded by the argument's rounding in far tails, where
    ``|log F| ~ t^2 / 2``). The composed delta is ``sum_j q_j w_j`` with ``w_j`` the delta of the
    other factors at ``eps - t_j``: non-decreasing in j, in [0, 1]. Summation by parts over the
    telescoping differences bounds the change by ``c (2 G_s w_s + delta~ + 2 S_end)`` (cdf G below
    the split s, sf S above), and ``delta~ >= w_s (S_s - S_end)``: a *relative* error
    ``c (1 + 2 G_s / (S_s - S_end))`` plus an absolute ``2 c S_end``. The clipped negative
    differences add their sum and the normalisation (pairwise sum, one division) a relative
    ``(log2 N + 22) u``. A hybrid argument (swap one factor at a time) composes these over the
    K factors: ``delta^ <= (1 + rho)^K delta + sum a`` and conversely.
    """
    values = np.concatenate([g, s])
    values = values[values > 0]
    log_span = float(np.max(np.abs(np.log(values)))) if values.size else 0.0
    c = _CDF_ULPS * _U * (1 + log_span)
    g_split = float(g[-1]) if g.size else 0.0
    s_split, s_end = (float(s[0]), float(s[-1])) if s.size else (0.0, 0.0)
    normalisation = (math.log2(n_cells + 1) + 22) * _U
    above = s_split - s_end
    if above > 1e-3 * g_split:
        rel = c * (1 + 2 * g_split / above) + normalisation
        return rel, (2 * c * s_end + 2 * clipped) / mass
    # no mass above the split: the absolute bound (3 |dF| per segment, summation by parts)
    peak = max(float(np.max(np.abs(g))) if g.size else 0.0, float(np.max(np.abs(s))) if s.size else 0.0)
    return normalisation, (10 * c * peak + 2 * clipped) / mass


def _second_moment_bound(loss: PrivacyLoss, edges: np.ndarray, g: np.ndarray, s: np.ndarray, raw: np.ndarray,
                         split: int, h: float, mass: float) -> float:
    """Upper bound on E[(Y - c(Y))^2 | cells]: sub-cell masses times the largest squared offset.

    The heaviest cells are split into _SUBCELLS sub-cells (CDF values at the interior points);
    every other cell is bounded by (h/2)^2. Exact for atoms at sub-cell edges, ~0.1 h^2 for
    smooth laws (the uniform value is h^2/12).
    """
    n_cells = raw.size
    at = loss.atoms()
    finite = 1.0 - loss.inf_mass
    if at.locations.size and float(np.sum(at.primary)) >= finite * (1 - 1e-12):
        # Purely atomic law: exact. An atom on a cell edge is h/2 from either centre.
        offs = at.locations - np.round(at.locations / h) * h
        return min(float(np.sum(at.primary * np.minimum(offs**2, (h / 2) ** 2))) / mass * (1 + 1e-12), (h / 2) ** 2)
    m = min(_REFINED_CELLS, n_cells)
    heavy = np.argpartition(raw, n_cells - m)[n_cells - m:] if m < n_cells else np.arange(n_cells)
    frac = np.arange(_SUBCELLS + 1) / _SUBCELLS  # sub-cell edges within a cell
    offsets = (frac - 0.5) * h
    weight = np.maximum(offsets[:-1] ** 2, offsets[1:] ** 2)  # max (y - c)^2 per sub-cell
    bound = 0.0
    left = heavy[heavy < split]
    right = heavy[heavy >= split]
    # Atoms clearly inside a sub-cell of a refined cell contribute their exact (x - c)^2 instead
    # of the sub-cell's maximum (an atom within rounding of a sub-cell edge keeps the maximum).
    atom_cell = np.ceil(at.locations / h - 0.5).astype(np.int64) - int(round(edges[0] / h + 0.5))
    position = (at.locations - edges[0]) / h * _SUBCELLS - atom_cell * _SUBCELLS  # in (0, _SUBCELLS]
    atom_sub = np.clip(np.ceil(position) - 1, 0, _SUBCELLS - 1).astype(np.intp)
    # only atoms clearly inside a sub-cell (rounding could put an edge atom in the neighbour)
    clear = np.abs(position - np.round(position)) > 1e-6
    atom_cell = np.where(clear, atom_cell, -1)
    for cells, fn, ends, sign in ((left, loss.cdf, (g[left], g[left + 1]), 1.0),
                                  (right, loss.sf, (s[right - split], s[right + 1 - split]), -1.0)):
        if cells.size == 0:
            continue
        x = edges[cells][:, None] + frac[None, 1:-1] * h
        full = np.empty((cells.size, _SUBCELLS + 1))
        full[:, 0], full[:, -1] = ends
        full[:, 1:-1] = np.asarray(fn(x.reshape(-1)), dtype=float).reshape(x.shape)
        sub = np.maximum(sign * np.diff(full, axis=1), 0.0)
        if at.locations.size:
            order = np.argsort(cells)
            row = order[np.minimum(np.searchsorted(cells, atom_cell, sorter=order), cells.size - 1)]
            hit = cells[row] == atom_cell
            for r, j, w, loc, cell in zip(row[hit], atom_sub[hit], at.primary[hit], at.locations[hit],
                                          atom_cell[hit]):
                take = min(w, sub[r, j])
                sub[r, j] -= take
                bound += take * (loc - (edges[cell] + h / 2)) ** 2
        bound += float(np.sum(sub @ weight))
    rest = max(mass - float(raw[heavy].sum()), 0.0)
    bound += rest * (h / 2) ** 2
    # each computed sub-cell mass may be off by 2 max|dF| (see _pmf_error)
    peak = max(float(np.max(np.abs(g))) if g.size else 0.0, float(np.max(np.abs(s))) if s.size else 0.0)
    bound += heavy.size * _SUBCELLS * 2 * _CDF_ULPS * _U * peak * (h / 2) ** 2
    return min(bound / mass * (1 + 1e-9), (h / 2) ** 2)


# ----------------------------------------------------------------------------------------
# Coupling width (GLW Lemma 5.3 / Thm 5.5, sharpened with Bennett)
# ----------------------------------------------------------------------------------------


def _bennett_width(variance: float, bound: float, eta_side: float) -> float:
    """s with exp(-(V/b^2) phi(b s / V)) = eta_side, phi(u) = (1+u) log(1+u) - u (Bennett)."""
    if variance <= 0:
        return 0.0
    # -log(eta) rather than log(1/eta): 1/eta overflows for subnormal eta.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # overflow -> inf: handled below
        c = bound * bound / variance * -math.log(eta_side)
    if not (math.isfinite(c) and math.isfinite(variance) and math.isfinite(bound)):
        return math.inf  # Bennett's bound is not computable in double precision: not used
    phi = lambda u: (1 + u) * math.log1p(u) - u - c  # noqa: E731
    hi = max(2.0 * math.sqrt(2 * c), 1.0)
    while phi(hi) < 0:
        hi *= 2
    lo = 0.0
    for _ in range(200):  # bisection: phi increases on (0, inf); keep phi(hi) >= 0
        mid = 0.5 * (lo + hi)
        if phi(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    u = hi
    return u * variance / bound * (1 + 1e-9)


def _coupling(cells: Sequence[_Cells], h: float, eta0: float) -> tuple[float, float, str]:
    """(s, eta, rule): P[|sum_i (e_i - beta_i)| > s] <= eta, e_i the per-step coupling errors."""
    total = sum(c.count for c in cells)
    variance = sum(c.count * c.second_moment for c in cells)
    bound = h / 2 + max(abs(c.shift) + c.mean_error for c in cells)
    deterministic = sum(c.count * (h / 2 + abs(c.shift) + c.mean_error) for c in cells)
    hoeffding = h * math.sqrt(total * (math.log(2) - math.log(eta0)) / 2)
    bennett = _bennett_width(variance, bound, eta0 / 2)
    best = min(hoeffding, bennett)
    if deterministic <= best:
        return deterministic, 0.0, "deterministic"
    return best, eta0, "bennett" if bennett <= hoeffding else "hoeffding"


def _planned_mesh(components, tails: Sequence[_Tails], eps_target: float, eta0: float) -> float:
    """Mesh h for which the predicted eps error (Bennett width with a predicted cell variance,
    plus the mean-error bound) is ~98.5% of the target."""
    total = sum(k for _, k in components)
    variations = [k * loss.continuous_variation() / 8 / (1.0 - loss.inf_mass) for loss, k in components]
    if not all(math.isfinite(v) for v in variations):
        raise CertificationError("the PRV accountant cannot bound the discretisation error: the density of a "
                                 "step's privacy loss has no finite variation bound in doubles (a base whose loss "
                                 "exceeds ~700, e.g. Laplace with a tiny scale); accountant='auto' answers it from "
                                 "the closed-form bounds")

    def width(h: float, with_bias: bool = True) -> float:
        variance = 0.0
        for (loss, k), tl in zip(components, tails):
            at = loss.atoms()
            finite = 1.0 - loss.inf_mass
            atom_mass = float(np.sum(at.primary)) / finite if at.locations.size else 0.0
            if at.locations.size:
                offs = at.locations - np.ceil(at.locations / h - 0.5) * h
                atom_var = float(np.sum(at.primary * offs**2)) / finite
            else:
                atom_var = 0.0
            variance += k * (atom_var + max(1.0 - atom_mass, 0.0) * 0.1 * h * h)
        spread = min(_bennett_width(variance, 0.5 * h, eta0 / 2),
                     h * math.sqrt(total * (math.log(2) - math.log(eta0)) / 2), total * h / 2)
        return spread + (sum(variations) * h * h if with_bias else 0.0)

    linear = width(1.0, with_bias=False)
    h = eps_target / linear if linear > 0 else eps_target
    for _ in range(12):  # atoms and the quadratic bias term make the width non-linear in h
        w = width(h)
        if w <= 0:
            break
        h *= 0.985 * eps_target / w
    return h


# ----------------------------------------------------------------------------------------
# Composition by FFT and the window (GLW Alg. 1, App. C.2)
# ----------------------------------------------------------------------------------------


def _log_mgf_cells(c: _Cells, h: float, lam: np.ndarray, coarse: bool = False) -> np.ndarray:
    """log E[e^{lam Y~}] of the discretised law at each order (exact, or approximate on <= 2048 blocks)."""
    if coarse:
        if "coarse" not in c.extra:
            size = max(1, int(math.ceil(c.pmf.size / 2048)))
            pad = (-c.pmf.size) % size
            p = np.concatenate([c.pmf, np.zeros(pad)]).reshape(-1, size)
            x = ((c.lo + np.arange(p.size)) * h + c.shift).reshape(-1, size)
            bm = p.sum(axis=1)
            keep = bm > 0
            c.extra["coarse"] = (np.log(bm[keep]), (p * x).sum(axis=1)[keep] / bm[keep])
        logp, pos = c.extra["coarse"]
    else:
        if "exact" not in c.extra:
            keep = np.nonzero(c.pmf > 0)[0]
            c.extra["exact"] = (np.log(c.pmf[keep]), (c.lo + keep) * h + c.shift)
        logp, pos = c.extra["exact"]
    expo = logp[None, :] + np.multiply.outer(lam, pos)
    top = expo.max(axis=1)
    return top + np.log(np.exp(expo - top[:, None]).sum(axis=1))


_COARSE_ORDERS = np.geomspace(1e-4, 1e6, 51)


def _chernoff_orders(cells: Sequence[_Cells], h: float, eta_side: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per side (upper, lower): candidate orders lam > 0 and the exact log E[e^{+-lam sum Y~}].

    The orders are picked on a coarse version of the laws (a heuristic); the values used in
    any bound are exact for the discretised laws, so every order gives a valid Chernoff bound.
    """
    lam = _COARSE_ORDERS
    log_eta = math.log(eta_side)
    out = []
    for sign in (+1.0, -1.0):
        approx = sum(c.count * _log_mgf_cells(c, h, sign * lam, coarse=True) for c in cells)
        crit = np.where(np.isfinite(approx), (approx - log_eta) / lam, np.inf)
        k = int(np.argmin(crit))
        cand = lam[max(k - 1, 0): k + 2]
        exact = sum(c.count * _log_mgf_cells(c, h, sign * cand) for c in cells)
        out.append((cand, exact))
    return out


def _support_range(cells: Sequence[_Cells], h: float) -> tuple[float, float]:
    x_min = sum(c.count * (c.lo * h + c.shift) for c in cells)
    x_max = sum(c.count * ((c.lo + c.pmf.size - 1) * h + c.shift) for c in cells)
    return x_min, x_max


def _window(cells: Sequence[_Cells], h: float, eta2: float, orders) -> tuple[float, float]:
    """Window [A, B] with P[sum Y~ < A] + P[sum Y~ > B] <= eta2 (Chernoff, GLW App. C.2)."""
    x_min, x_max = _support_range(cells, h)
    if x_max - x_min <= 16 * h:
        return x_min, x_max
    log_eta = math.log(eta2 / 2)
    (lam_u, lm_u), (lam_l, lm_l) = orders
    upper = min(float(np.min((lm_u - log_eta) / lam_u)), x_max)
    lower = max(-float(np.min((lm_l - log_eta) / lam_l)), x_min)
    return lower, upper


def _tail_bound(cells: Sequence[_Cells], h: float, lower: float, upper: float, orders) -> float:
    """Chernoff bound on P[sum Y~ < lower] + P[sum Y~ > upper] at the given orders."""
    x_min, x_max = _support_range(cells, h)
    (lam_u, lm_u), (lam_l, lm_l) = orders
    out = 0.0
    if upper < x_max:
        out += math.exp(min(float(np.min(lm_u - lam_u * upper)), 0.0))
    if lower > x_min:
        out += math.exp(min(float(np.min(lm_l + lam_l * lower)), 0.0))
    return out


def _compose(cells: Sequence[_Cells], h: float, lower: float, upper: float, max_points: int,
             extended: bool = False):
    """Circular convolution of all components on n >= (upper - lower)/h + 1 points by one irfft.

    Returns (t0, pmf, fp_fft, n) with pmf[m] the mass at t0 + m h (wrapped modulo n h).
    ``extended``: transforms and powering in ``np.longdouble`` (x87 80-bit: unit roundoff 2^-64,
    2048x below double), for a ~2000x lower floating-point floor at ~3.5x the cost; the result
    is rounded to double (relative u per entry, accounted by the caller).
    """
    offset_cells = sum(c.count * c.lo for c in cells)
    offset_shift = math.fsum(c.count * c.shift for c in cells)
    x0 = offset_cells * h + offset_shift
    j_a = int(math.floor((lower - x0) / h + 1e-9))
    needed = int(math.ceil((upper - x0) / h - 1e-9)) - j_a + 1
    n = scipy.fft.next_fast_len(max(needed, 16), real=True)
    if n > max_points:
        raise ValueError(f"the composed window needs {n} points (> max_points={max_points}); "
                         "use a larger eps_error or delta_error")
    j_a -= (n - needed) // 2
    real = np.longdouble if extended else np.float64
    unit = float(np.finfo(real).eps) / 2
    log2n = math.log2(n)
    e_inf = _FFT_STAGE_ULPS * unit * log2n  # componentwise forward-FFT error (||q||_1 = 1)
    log_abs = np.zeros(n // 2 + 1, dtype=real)
    log_abs_err = np.zeros(n // 2 + 1)
    spectra = []
    for c in cells:
        q = c.pmf
        if q.size > n:
            q = np.bincount(np.arange(q.size) % n, weights=q, minlength=n)
        spec = scipy.fft.rfft(q.astype(real), n)
        absval = np.abs(spec)
        with np.errstate(divide="ignore"):
            log_abs += c.count * np.log(absval)
            log_abs_err += (c.count - 1) * np.log(absval.astype(float) + e_inf)
        spectra.append(spec)
    keep = log_abs > math.log(_SPECTRUM_FLOOR)
    idx = np.nonzero(keep)[0]
    total_phase = np.zeros(idx.size, dtype=real)
    for c, spec in zip(cells, spectra):
        total_phase += c.count * np.angle(spec[idx])
    composed = np.zeros(n // 2 + 1, dtype=np.clongdouble if extended else complex)
    composed[idx] = np.exp(log_abs[idx] + 1j * total_phase)
    pmf = scipy.fft.irfft(composed, n).astype(float)
    pmf = np.roll(pmf, -(j_a % n))
    t0 = x0 + j_a * h
    log_abs = log_abs.astype(float)
    # Floating-point bound on ||pmf - exact circular convolution||_1 (see module docstring).
    k_total = sum(c.count for c in cells)
    # |prod P_i^k_i - prod P^_i^k_i| <= sum_i k_i |dP_i| prod_l (|P^_l| + e)^(k_l - 1) (1 + e)^b
    weights = np.exp(log_abs_err) * (1 + e_inf) ** len(cells)
    spec_err = k_total * e_inf * weights
    # rounding of exp(sum k log|P| + i sum k arg P): relative (2 + pi) u per unit of k, plus the logs
    power_err = ((2 + math.pi) * k_total + 200) * 2 * unit * np.exp(log_abs) * keep
    dropped = np.where(keep, 0.0, np.exp(log_abs))
    per_entry = spec_err + power_err + dropped
    fp_fft = math.sqrt(2.0 * float(np.sum(per_entry**2)))
    fp_ifft = _FFT_STAGE_ULPS * unit * log2n * 2.0 * float(np.sum(np.abs(composed)))
    return t0, pmf, fp_fft + fp_ifft, n


def _build_curve(components, direction: str, eps_target: float, delta_error: float, max_points: int,
                 extended: bool = False) -> PRVCurve:
    """Discretise, compose and bracket one direction (``extended``: long-double FFT, see _compose)."""
    start = time.perf_counter()
    total = sum(k for _, k in components)
    eta0, eta1, eta2 = 0.5 * delta_error, 0.25 * delta_error, 0.25 * delta_error
    tau = eta1 / (2 * total)
    tails = []
    for loss, _ in components:
        try:
            tl = _find_tails(loss, tau)
        except ValueError as exc:
            raise ValueError(f"the PRV accountant cannot truncate the privacy loss of one {type(loss).__name__} "
                             f"step of the mechanism ({exc}); the mechanism is too far from private for a "
                             "grid of losses (e.g. noise_multiplier too small); use accountant='rdp'") from None
        extent = max(abs(tl.lower), abs(tl.upper))
        if not extent <= MAX_STEP_LOSS:
            raise ValueError(f"the PRV accountant supports privacy losses up to {MAX_STEP_LOSS:.3g} per step; one "
                             f"{type(loss).__name__} step of the mechanism reaches {extent:.3g} (its squares, "
                             "summed over the compositions, overflow double precision); use accountant='rdp'")
        tails.append(tl)
    h = _planned_mesh(components, tails, eps_target, eta0)
    # The achieved error is not proportional to h when the loss has atoms (ApproxDP, PureDP):
    # their offsets from the grid vary erratically with h. Refinement is therefore geometric with
    # a growing margin; the cell count is bounded by max_points, whose error names the options.
    for attempt in range(12):
        cells = [_discretise(loss, k, h, tl, max_points) for (loss, k), tl in zip(components, tails)]
        width, eta0_used, rule = _coupling(cells, h, eta0)
        bias = sum(c.count * c.mean_error for c in cells)
        eps_error = width + bias
        if eps_error <= eps_target:
            break
        logger.debug("%s: eps_error %.4g > target %.4g at h=%.4g; refining", direction, eps_error, eps_target, h)
        h *= min(0.98, 0.98 ** (attempt + 1) * eps_target / eps_error)
    else:
        raise ValueError(f"the PRV accountant could not reach eps_error={eps_target:.3g} (achieved {eps_error:.3g} "
                         "after 12 refinements of the grid); pass a larger eps_error or use accountant='cf'")
    t_disc = time.perf_counter()
    eta1_used = sum(c.count * c.tail for c in cells)
    if total == 1:  # one step: no composition, no window, no FFT
        only = cells[0]
        t0, pmf, fp_fft, n, eta2_used = only.lo * h + only.shift, only.pmf.copy(), 0.0, only.pmf.size, 0.0
    else:
        orders = _chernoff_orders(cells, h, eta2 / 2)
        lower, upper = _window(cells, h, eta2, orders)
        t0, pmf, fp_fft, n = _compose(cells, h, lower, upper, max_points, extended)
        eta2_used = _tail_bound(cells, h, t0 - h / 2, t0 + (n - 0.5) * h, orders)
    t_fft = time.perf_counter()
    fp_pmf = sum(c.count * c.pmf_error for c in cells)
    # relative: the cell masses (hybrid argument) and the curve's own sums (PRVCurve)
    rel_error = math.expm1(sum(c.count * math.log1p(c.pmf_rel_error) for c in cells) + (3 * n + 17) * _U)
    negative = float(-np.sum(pmf[pmf < 0]))
    fp = fp_fft + fp_pmf
    if negative > fp_fft:
        logger.debug("%s: negative mass %.3g exceeds the FFT bound %.3g; using 4x it", direction, negative, fp_fft)
        fp = max(fp, 4 * negative + fp_pmf)
    np.maximum(pmf, 0.0, out=pmf)  # moves every entry towards the (non-negative) exact pmf
    delta_total = eta0_used + eta1_used + eta2_used + fp
    # Below delta_total no eps is certified; just above it the bracket is valid but wide.
    min_delta = 2 * delta_total
    log_finite = sum(k * math.log1p(-loss.inf_mass) for loss, k in components)
    details = (
        ("eps_coupling", width),
        ("eps_mean_bias", bias),
        ("delta_coupling_eta0", eta0_used),
        ("delta_truncation_eta1", eta1_used),
        ("delta_wraparound_eta2", eta2_used),
        ("delta_fp_fft", fp_fft),
        ("delta_fp_pmf", fp_pmf),
        ("delta_fp_relative", rel_error),
        ("negative_mass", negative),
        ("mesh", h),
        ("points", n),
        ("window_lower", t0),
        ("window_upper", t0 + (n - 1) * h),
    )
    budget = ErrorBudget(eps_error=float(eps_error), delta_error=float(delta_total), min_delta=float(min_delta),
                         details=tuple((name, float(value)) for name, value in details))
    logger.debug(
        "%s: K=%d h=%.4g (%s) n=%d window=[%.4g, %.4g] eps_err=%.4g delta_err=%.3g (eta0 %.2g eta1 %.2g "
        "eta2 %.2g fp %.2g) discretise %.3fs compose %.3fs", direction, total, h, rule, n, t0,
        t0 + (n - 1) * h, eps_error, delta_total, eta0_used, eta1_used, eta2_used, fp, t_disc - start,
        t_fft - t_disc)
    top = math.fsum(k * float(loss.support[1]) for loss, k in components) if all(
        math.isfinite(loss.support[1]) for loss, _ in components) else math.inf
    return PRVCurve(direction=direction, t0=t0, h=h, pmf=pmf, log_finite=log_finite, eps_error=eps_error,
                    delta_error=delta_total, rel_error=rel_error, error_budget=budget,
                    top=top + (4 + len(components)) * _U * abs(top) + 1e-300)
