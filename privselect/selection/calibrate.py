"""Calibration: how much noise, how many steps, how many runs for a privacy budget.

* [`calibrate_noise`][privselect.selection.calibrate.calibrate_noise]: the smallest DP-SGD noise
  multiplier that meets a target (eps, delta), for one run (``k=None``) or for the whole tuning
  (the best of K runs, K from a law); Opacus's ``get_noise_multiplier`` habit.
* [`calibrate_steps`][privselect.selection.calibrate.calibrate_steps] /
  [`calibrate_epochs`][privselect.selection.calibrate.calibrate_epochs]: the longest training
  at a given noise multiplier.
* [`calibrate_k_mean`][privselect.selection.calibrate.calibrate_k_mean]: the largest E[K] (for a
  chosen family of K laws) whose certificate meets the target.
* [`cor62_thresholds`][privselect.selection.bounds.cor62.cor62_thresholds] and
  [`meets_thresholds`][privselect.selection.bounds.cor62.meets_thresholds]: KRW Cor. 6.2 point-wise
  thresholds for candidates whose privacy differs (re-exported from ``bounds.cor62``).

Every answer is checked with the certified computation itself (``privacy_profile(...).epsilon``
for one run, ``certify`` for a tuning, the same accountant): it is returned only where that
certificate meets the target, so it is sound whatever the search did. The search is cheap
first: the root of a surrogate (a coarse PRV profile, or RDP where PRV cannot build one; an
estimate, never returned) is the first point; Newton steps with the surrogate's slope, then secant
steps through the certified values, move it to the answer, so that the certified accountant is
asked two or three times, near the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validation as check
from ..accounting import get_accountant, privacy_profile
from ..accounting.base import Accountant
from ..accounting.gaussian import gaussian_epsilon
from ..accounting.profile import CertificationError, PrivacyProfile
from ..errors import UnreachableTargetError
from ..mechanisms import Mechanism, RandomAllocation, dpsgd
from .bounds.cor62 import Cor62Thresholds, cor62_thresholds, meets_thresholds
from .calibration_target import Procedure, Progress
from .certify import FAMILIES, RELEASE_ALL, certify
from .distributions import Geometric, KDistribution

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..attack_risk import RiskTarget

__all__ = [
    "calibrate_noise",
    "calibrate_steps",
    "calibrate_epochs",
    "calibrate_k_mean",
    "Cor62Thresholds",
    "cor62_thresholds",
    "meets_thresholds",
]

#: Noise multipliers searched (Opacus stops at 1e6 too).
SIGMA_RANGE = (1e-2, 1e6)
#: Steps searched by calibrate_steps.
MAX_STEPS = 10**9
#: The returned noise multiplier sits this far (relative) above the predicted threshold: the
#: certificate at sigma * (1 - 1e-3) misses the target by a wide margin.
_STEP_ABOVE = 2e-4
#: Options of the surrogate PRV profile (an estimate used to aim; 1% eps slack, small grids).
_SURROGATE_PRV = {"rel_eps_error": 1e-2, "max_points": 1 << 17}
#: Errors that mean "this accountant cannot answer here".
_NO_ANSWER = (ValueError, ArithmeticError, MemoryError)
#: Largest model step in log sigma (a factor e).
_MAX_LOG_STEP = 1.0
#: Certified evaluations before the search gives up on the surrogate and bisects.
_MAX_MODEL_STEPS = 6


# -- the run being calibrated ----------------------------------------------------------------


@dataclass(frozen=True)
class _Schedule:
    """Sampling rate, steps and sampling scheme of DP-SGD, counted as ``ps.dpsgd`` counts them."""

    rate: float
    steps: int
    sampling: str

    def mechanism(self, sigma: float, steps: int | None = None) -> Mechanism:
        return dpsgd(noise_multiplier=sigma, sample_rate=self.rate, steps=self.steps if steps is None else steps,
                     sampling=self.sampling)


def _schedule(sample_rate, batch_size, dataset_size, steps, epochs, sampling) -> _Schedule:
    """Validate the DP-SGD vocabulary with ``ps.dpsgd`` itself (same errors, same step count)."""
    mechanism = dpsgd(noise_multiplier=1.0, sample_rate=sample_rate, batch_size=batch_size,
                      dataset_size=dataset_size, steps=steps, epochs=epochs, sampling=sampling)
    (step, count), = mechanism.components()
    if isinstance(step, RandomAllocation):  # count epochs of t steps: the same schedule at rate 1 / t
        return _Schedule(rate=1.0 / step.steps, steps=count * step.steps, sampling=sampling)
    return _Schedule(rate=float(getattr(step, "rate", 1.0)), steps=count, sampling=sampling)


def _rate(sample_rate, batch_size, dataset_size, sampling) -> _Schedule:
    return _schedule(sample_rate, batch_size, dataset_size, 1, None, sampling)


def _check_target(target_epsilon, delta, k, bound: str | None = None,
                  accountant: str | Accountant = "auto") -> tuple[float, float]:
    """The checks every calibration makes at its surface (the errors name the parameter)."""
    target = check.positive("target_epsilon", target_epsilon)
    delta = check.delta_scalar("delta", delta)
    if k is not None and not isinstance(k, KDistribution):
        raise TypeError(f"k must be None (one run) or a distribution of K (e.g. ps.Geometric(mean=10)), "
                        f"got {type(k).__name__}")
    if bound is not None and (k is None or bound not in FAMILIES + (RELEASE_ALL,)):
        raise ValueError(f"bound must be None or, with a K law k, one of {FAMILIES + (RELEASE_ALL,)}; got {bound!r}"
                         + (" with k=None" if k is None else ""))
    get_accountant(accountant)  # a name that is not registered raises, naming accountant
    return target, delta


# -- what is certified, and the surrogate that aims -------------------------------------------


def _certified(k: KDistribution | None, delta: float, bound: str | None, accountant: str | Accountant) -> Callable[[Mechanism], float]:
    """The certified epsilon of one run (``privacy_profile(m, accountant).epsilon(delta)``) or of the
    best of K runs (``certify(m, k, delta).epsilon``); +inf where nothing certifies it."""
    def epsilon(mechanism: Mechanism) -> float:
        try:
            if k is None:
                return float(privacy_profile(mechanism, accountant=accountant).epsilon(delta))
            return float(certify(mechanism, k, delta, bound=bound, accountant=accountant).epsilon)
        except _NO_ANSWER:
            return math.inf
    return epsilon


class _Surrogate:
    """A cheap estimate of the certified epsilon: a coarse PRV profile (1% eps slack, small grids), or
    RDP where PRV would need a larger grid (little noise). Decreasing in sigma: RDP is the larger."""

    def __init__(self, k: KDistribution | None, delta: float, bound: str | None) -> None:
        self.k, self.delta, self.bound = k, delta, bound

    def _epsilon(self, profile: PrivacyProfile) -> float:
        if self.k is None:
            return float(profile.epsilon(self.delta))
        if self.bound == RELEASE_ALL:  # K and every run released: the K-mixture of the run's compositions
            return float(certify(profile.mechanism, self.k, self.delta, bound=RELEASE_ALL,
                                 accountant=profile.accountant).epsilon)
        return float(certify(profile, self.k, self.delta, bound=self.bound).epsilon)

    def __call__(self, mechanism: Mechanism) -> tuple[float, str]:
        """The estimate, and the accountant that gave it ("prv", "rdp" or "allocation")."""
        target = self.delta if self.k is None else self.delta / max(self.k.mean, 1.0)
        for accountant, options in (("prv", {"target_delta": target, **_SURROGATE_PRV}), ("rdp", {}),
                                    ("allocation", {"tight": False})):  # random allocation: its GDP upper end
            try:
                return self._epsilon(privacy_profile(mechanism, accountant=accountant, **options)), accountant
            except _NO_ANSWER:
                continue
        return math.inf, "none"


# -- the search --------------------------------------------------------------------------------


def _log_root(g: Callable[[float], float], x0: float, lo: float, hi: float, step: float = math.log(2.0)) -> float:
    """A root of the decreasing g on [lo, hi] (log scale), searched outwards from x0; lo or hi where g
    keeps its sign (the caller checks those ends with the certified computation)."""
    x0 = min(max(x0, lo), hi)
    g0 = g(x0)
    if not math.isfinite(g0) and g0 > 0:
        g0 = math.inf
    direction = 1.0 if g0 > 0 else -1.0
    a, ga = x0, g0
    while True:
        b = min(max(a + direction * step, lo), hi)
        gb = g(b)
        if (gb > 0) != (ga > 0):
            break
        if b in (lo, hi):
            return b
        a, ga = b, gb
    left, right = (a, b) if a < b else (b, a)
    finite = lambda x: min(max(g(x), -1e3), 1e3)  # noqa: E731 (+inf: not certified, far on the unsafe side)
    from scipy import optimize  # lazily: scipy.optimize is a tenth of a second of import
    return optimize.brentq(finite, left, right, xtol=1e-5)


def _guess_sigma(target: float, delta: float, schedule: _Schedule, k: KDistribution | None) -> float:
    """First guess (an estimate): the central-limit GDP approximation of DP-SGD (Dong, Roth, Su 2022,
    Cor. 5.4), mu = q sqrt(T (e^{1/sigma^2} - 1)), with half the budget at delta / E[K] for a tuning."""
    if k is not None:
        target, delta = target / 2, delta / max(k.mean, 1.0)
    from scipy import optimize  # lazily: scipy.optimize is a tenth of a second of import
    mu = optimize.brentq(lambda m: float(gaussian_epsilon(delta, m)) - target, 1e-8, 1e3) \
        if float(gaussian_epsilon(delta, 1e3)) > target else 1e3
    q, t = schedule.rate, schedule.steps
    return 1.0 / math.sqrt(math.log1p(mu * mu / (q * q * t)))


def _next_root(points: list[tuple[float, float]], x: float, slope_at: Callable[[float], float]) -> float:
    """Where log F(x) - log target vanishes, from the certified ``points`` [(x, log F - log target)]: a
    secant through the two nearest to the last point ``x``, or a Newton step with the surrogate's slope."""
    near = sorted(points, key=lambda p: abs(p[0] - x))[:2]
    if len(near) == 2 and abs(near[0][0] - near[1][0]) > 1e-12:
        (x1, g1), (x2, g2) = near
        slope = (g2 - g1) / (x2 - x1)
    else:
        (x1, g1), slope = near[0], slope_at(near[0][0])
    if not (slope < 0 and math.isfinite(slope)):
        return math.nan
    return x1 - min(max(g1 / slope, -_MAX_LOG_STEP), _MAX_LOG_STEP)


def _smallest_sigma(certified: Callable[[float], float], surrogate: Callable[[float], tuple[float, str]], target: float,
                    guess: float, verify_tight: bool) -> float:
    """The smallest noise multiplier (to 2e-4, relative) whose certified epsilon is <= target.

    ``certified(sigma)`` is the certificate, ``surrogate(sigma)`` an estimate of it and the accountant
    that gave it; both decrease in sigma. Only a sigma whose certificate was computed and meets the
    target is returned.
    """
    lo, hi = (math.log(s) for s in SIGMA_RANGE)
    log_target = math.log(target)
    s_cache: dict[float, tuple[float, str]] = {}

    def s_answer(x: float) -> tuple[float, str]:
        if x not in s_cache:
            value, source = surrogate(math.exp(x))
            s_cache[x] = (math.log(value) - log_target if value > 0 else -math.inf, source)
        return s_cache[x]

    def s_gap(x: float) -> float:
        return s_answer(x)[0]

    safe, unsafe = math.inf, -math.inf       # log sigma: smallest verified safe, largest verified unsafe
    points: list[tuple[float, float]] = []   # (x, log F - log target)

    def evaluate(x: float) -> None:
        nonlocal safe, unsafe
        value = certified(math.exp(x))
        if value <= target:
            safe = min(safe, x)
        else:
            unsafe = max(unsafe, x)
        if 0 < value < math.inf:
            points.append((x, math.log(value) - log_target))

    def slope_at(x: float) -> float:
        """d log eps / d log sigma: the surrogate's, where one accountant answers on both sides; else the
        central-limit GDP model's, -(1/sigma^2) / (1 - e^{-1/sigma^2}) (at most -1)."""
        for h in (1e-2, -1e-2):
            (g0, a0), (g1, a1) = s_answer(x), s_answer(x + h)
            if a0 == a1 and math.isfinite(g0) and math.isfinite(g1) and g1 != g0:
                return (g1 - g0) / h
        inv = math.exp(-2 * x)
        return -inv / -math.expm1(-inv) if inv < 700 else -inv

    x = _log_root(s_gap, math.log(guess), lo, hi)
    for _ in range(_MAX_MODEL_STEPS):
        evaluate(x)
        if safe - unsafe <= 2.5 * _STEP_ABOVE:
            return math.exp(safe)  # verified on both sides
        root = _next_root(points, x, slope_at) if points else math.nan
        near = safe - root <= 2 * _STEP_ABOVE
        if near and not verify_tight and x == safe and len(points) >= 2:
            return math.exp(safe)  # a secant through this very point puts the threshold just below it
        x_next = root - _STEP_ABOVE if near else root + _STEP_ABOVE
        if not unsafe < x_next < safe:  # the model left the bracket (or failed): bisect it, or step out by 1%
            x_next = (safe + unsafe) / 2 if math.isfinite(safe + unsafe) else \
                (unsafe + 0.01 if math.isfinite(unsafe) else safe - 0.01)
        x_next = min(max(x_next, lo), hi)
        if x_next in (safe, unsafe):
            break
        x = x_next
    return _bisect_sigma(evaluate, lambda: (safe, unsafe), lo, hi, target)


def _bisect_sigma(evaluate: Callable[[float], None], bracket: Callable[[], tuple[float, float]],
                  lo: float, hi: float, target: float) -> float:
    """Fallback: bracket by doubling, then bisect in log sigma with the certified computation alone."""
    safe, unsafe = bracket()
    while not math.isfinite(safe):
        x = min(max(unsafe, lo) + math.log(2.0), hi) if math.isfinite(unsafe) else hi
        evaluate(x)
        safe, unsafe = bracket()
        if not math.isfinite(safe) and x >= hi:
            raise CertificationError(
                f"no noise multiplier up to {SIGMA_RANGE[1]:g} has a certificate meeting target_epsilon={target:g}")
    while not math.isfinite(unsafe):
        x = max(safe - math.log(2.0), lo)
        if x >= safe:
            break
        evaluate(x)
        safe, unsafe = bracket()
        if not math.isfinite(unsafe) and x <= lo:
            break
    if not math.isfinite(unsafe):
        raise CertificationError(
            f"every noise multiplier down to {SIGMA_RANGE[0]:g} meets target_epsilon={target:g}: no smallest one "
            "exists in that range (the target is larger than this run can spend)")
    while safe - unsafe > 2.5 * _STEP_ABOVE:
        evaluate((safe + unsafe) / 2)
        safe, unsafe = bracket()
    return math.exp(safe)


def calibrate_noise(target_epsilon: float | RiskTarget, delta: float | None = None, *, sample_rate: float | None = None,
                    batch_size: int | None = None, dataset_size: int | None = None, steps: int | None = None,
                    epochs: float | None = None, k: KDistribution | None = None, sampling: str = "poisson",
                    bound: str | None = None, accountant: str | Accountant = "auto", score_noise: Mechanism | None = None,
                    search: Any = None, final: Mechanism | str | None = None, progress: bool = False) -> float:
    """The smallest DP-SGD noise multiplier whose certificate meets ``(target_epsilon, delta)``.

    The run is ``ps.dpsgd(noise_multiplier=sigma, ...)`` with the same vocabulary: ``sample_rate``
    or ``batch_size`` with ``dataset_size``; ``steps`` or ``epochs`` (steps = ceil(epochs / rate),
    never fewer than trained; Opacus's ``get_noise_multiplier`` counts int(epochs / rate));
    ``sampling`` ``"poisson"`` or ``"without_replacement"``.

    ``k=None`` calibrates one run: ``privacy_profile(run, accountant).epsilon(delta)`` is at most the
    target. A K law (``ps.Geometric(10)``) calibrates the whole tuning, the best of K runs released:
    ``certify(run, k, delta, bound=bound, accountant=accountant).epsilon`` is at most the target
    (Koskela, Redberg, Wang 2024, Thm 5.2 / 5.7 / Cor. 5.8, or the RDP bound of Papernot, Steinke 2022).
    The other arguments are those of the certificate calibrated
    ([`Procedure`][privselect.selection.calibration_target.Procedure]): ``score_noise`` (a mechanism
    composed with each run, e.g. ``ps.Laplace(b)``), ``search`` (an adaptive search, ``ps.AdaptiveSearch``
    or its density ratio (C, c): ``ps.certify_adaptive``), ``final`` (a final training run on the full data,
    a Mechanism, or ``"same"`` for the calibrated run once more: ``ps.certify_pipeline``). ``progress=True``
    shows a count of certified evaluations once the calibration has taken 2 s.
    The returned sigma is sound: that certificate was computed at it and meets the target. It is
    tight: the threshold lies less than 5e-4 (relative) below it, so at sigma * (1 - 1e-3) the
    same certificate misses the target. For one run a certified evaluation just below shows this;
    for a tuning (a certificate costs about a second) the secant through the certified values,
    the last one at sigma itself, does. Raises ``CertificationError`` where no noise multiplier in
    [1e-2, 1e6] answers (a target below what even sigma = 1e6 certifies, or one that needs no noise). With
    ``score_noise`` or ``search`` part of the certificate does not depend on sigma: a target below that floor (the
    certificate with no training at all, ``Procedure.floor``; a lower bound on every sigma's certificate) raises
    ``UnreachableTargetError`` (a ``CertificationError``) naming the floor, before any search.

    >>> import privselect as ps
    >>> sigma = ps.calibrate_noise(3.0, 1e-5, batch_size=256, dataset_size=60000, epochs=60)
    >>> run = ps.dpsgd(noise_multiplier=sigma, batch_size=256, dataset_size=60000, epochs=60)
    >>> bool(ps.privacy_profile(run).epsilon(1e-5) <= 3.0)
    True

    A [`RiskTarget`][privselect.attack_risk.RiskTarget] in place of epsilon calibrates to attack risk (Kulynych et
    al., "Attack-aware noise calibration", NeurIPS 2024): ``ps.RiskTarget(tpr=0.05, fpr=1e-3)`` returns the
    smallest sigma at which ``ps.risk`` certifies that no membership test reaches TPR 0.05 at FPR 1e-3. The
    target is met by the risk bound itself: ``ps.risk`` of one run's profile, or of the calibrated certificate
    (every profile it knows: KRW's selection profile and the K-mixture, or the adaptive search's RDP curve);
    ``delta`` is then optional (it only adds the certificate's (epsilon, delta) pair). With ``bound="mixture"`` (K and
    every run released) the target is met by ``ps.risk`` of the K-mixture certificate.
    """
    from ..attack_risk import RiskTarget

    risk_target = isinstance(target_epsilon, RiskTarget)
    if not risk_target and delta is None:
        raise ValueError("delta is required: calibrate_noise(target_epsilon, delta, ...) meets (target_epsilon, delta); "
                         "with a ps.RiskTarget in place of target_epsilon no delta is needed")
    if risk_target or score_noise is not None or search is not None or final is not None:
        return _calibrate_procedure(target_epsilon, delta, _schedule(sample_rate, batch_size, dataset_size, steps,
                                                                     epochs, sampling),
                                    Procedure(k, delta, score_noise, search, final, bound, accountant), progress)
    target, delta = _check_target(target_epsilon, delta, k, bound, accountant)
    schedule = _schedule(sample_rate, batch_size, dataset_size, steps, epochs, sampling)
    counter = Progress(progress, "privselect calibrate")
    certified = counter.wrap(_certified(k, delta, bound, accountant))
    surrogate = _Surrogate(k, delta, bound)
    try:
        return _smallest_sigma(lambda s: certified(schedule.mechanism(s)), lambda s: surrogate(schedule.mechanism(s)),
                               target, _guess_sigma(target, delta, schedule, k), verify_tight=k is None)
    finally:
        counter.close()


def _calibrate_procedure(target: Any, delta: float | None, schedule: _Schedule, procedure: Procedure,
                         progress: bool) -> float:
    """``calibrate_noise`` on the certificate of ``procedure`` (score noise, adaptive search, final run, or a
    RiskTarget met by ``ps.risk`` of it): the same search, the same checks."""
    from ..attack_risk import RiskTarget

    k = procedure.k
    if procedure.bound is not None and (k is None or procedure.bound not in FAMILIES + (RELEASE_ALL,)):
        raise ValueError(f"bound must be None or, with a K law k, one of {FAMILIES + (RELEASE_ALL,)}; got "
                         f"{procedure.bound!r}")
    get_accountant(procedure.accountant)
    if isinstance(target, RiskTarget):
        if procedure.bound not in (None, RELEASE_ALL):
            raise ValueError(f"bound={procedure.bound!r}: a risk target is met by ps.risk of the certificate (every "
                             f"profile it knows); leave bound=None (or {RELEASE_ALL!r}: K and every run released)")
        if delta is not None:
            check.delta_scalar("delta", delta)
        limit, guess = target.bound, 1.0
        estimate = _risk_surrogate(target, k, schedule)
    else:
        limit, delta = _check_target(target, delta, k, None, procedure.accountant)
        guess = _guess_sigma(limit, delta, schedule, k)
        iid = _Surrogate(k, delta, procedure.bound if procedure.search is procedure.final is None else None)

        def estimate(sigma: float) -> tuple[float, str]:  # i.i.d., without the rest: it aims, never answers
            return iid(procedure.run(schedule.mechanism(sigma)))
    _refuse_below_floor(target, limit, procedure)
    counter = Progress(progress, "privselect calibrate")
    measure = counter.wrap(procedure.measure(target))
    try:
        return _smallest_sigma(lambda s: measure(schedule.mechanism(s)), estimate, limit, guess,
                               verify_tight=k is None)
    finally:
        counter.close()


def _refuse_below_floor(target: Any, limit: float, procedure: Procedure) -> None:
    """Raise ``UnreachableTargetError`` where the target lies below what the score noise and the adaptive search
    cost with no training at all (``Procedure.floor``: a lower bound on the certificate at every noise multiplier),
    before any search: no noise multiplier can meet it."""
    floor = procedure.floor(target)
    if floor is None or not math.isfinite(floor) or not floor > limit:
        return  # no floor, or none certified (+inf: its certificate failed): the search decides
    from ..attack_risk import RiskTarget

    if isinstance(target, RiskTarget):
        measured = "the advantage" if target.advantage is not None else f"TPR at FPR {target.fpr:g}"
        asked = f"target_epsilon=RiskTarget({target})"
        floor_text = f"the floor {floor:.6g} ({measured}, ps.risk of that certificate)"
    else:
        asked, floor_text = f"target_epsilon={limit:g}", f"the floor {floor:.6g}"
    raise UnreachableTargetError(
        f"{asked} is below {floor_text} that {procedure.costs()} with no training at all (noise_multiplier = "
        "inf): no noise multiplier meets it; raise the target, or spend less on the score noise or the search "
        "(a larger score-noise scale, a density ratio C/c closer to 1, a smaller E[K])", floor)


def _risk_surrogate(target, k: KDistribution | None, schedule: _Schedule) -> Callable[[float], tuple[float, str]]:
    """An estimate of the certified risk (aims the search, never returned): the risk of the central-limit GDP
    approximation of DP-SGD, mu = q sqrt(T (e^{1/sigma^2} - 1)) (Dong, Roth, Su 2022, Cor. 5.4)."""
    from ..accounting.profile import gdp_profile
    from ..attack_risk import Risk
    from .bounds import selection_profile

    def estimate(sigma: float) -> tuple[float, str]:
        with np.errstate(over="ignore"):
            mu = schedule.rate * math.sqrt(schedule.steps * math.expm1(min(1.0 / (sigma * sigma), 700.0)))
        if not 0 < mu < 1e6:
            return (math.inf if mu >= 1e6 else 0.0), "gdp"
        profile = gdp_profile(mu)
        if k is not None:
            profile = selection_profile(profile, k)
        return target.value(Risk(profiles=(profile,))), "gdp"
    return estimate


# -- steps and epochs at a given noise multiplier ----------------------------------------------------


def calibrate_steps(noise_multiplier: float, target_epsilon: float, delta: float, *,
                    sample_rate: float | None = None, batch_size: int | None = None,
                    dataset_size: int | None = None, k: KDistribution | None = None, sampling: str = "poisson",
                    bound: str | None = None, accountant: str = "auto") -> int:
    """The largest number of DP-SGD steps at ``noise_multiplier`` whose certificate meets the target.

    Same vocabulary and certificates as [`calibrate_noise`][privselect.selection.calibrate.calibrate_noise]:
    the certificate with the returned T meets ``(target_epsilon, delta)`` and the one with T + 1
    does not. Raises ``CertificationError`` if even one step misses the target, or if more than
    ``MAX_STEPS`` steps meet it.
    """
    sigma = check.positive("noise_multiplier", noise_multiplier)
    target, delta = _check_target(target_epsilon, delta, k, bound, accountant)
    schedule = _rate(sample_rate, batch_size, dataset_size, sampling)
    certified = _certified(k, delta, bound, accountant)
    surrogate = _Surrogate(k, delta, bound)
    values: dict[int, float] = {}

    def fits(t: int) -> bool:
        if t not in values:
            values[t] = certified(schedule.mechanism(sigma, t))
        return values[t] <= target

    if not fits(1):
        raise CertificationError(f"even one step at noise_multiplier={sigma:g} misses target_epsilon={target:g} "
                                 f"at delta={delta:g}")
    # aim with the surrogate (increasing in T: log T is searched with a decreasing function of -log T)
    gap = lambda y: math.log(max(surrogate(schedule.mechanism(sigma, max(1, round(math.exp(-y)))))[0], 1e-300)) \
        - math.log(target)  # noqa: E731
    aim = max(1, min(MAX_STEPS, round(math.exp(-_log_root(gap, 0.0, -math.log(MAX_STEPS), 0.0)))))
    return _largest_steps(fits, values, aim, target)


def _largest_steps(fits: Callable[[int], bool], values: dict[int, float], aim: int, target: float) -> int:
    """The largest T with ``fits(T)`` (certified epsilon <= target; increasing in T), from a first aim:
    secant steps on (log T, log eps) through the nearest certified values, then bisection."""
    good, bad = 1, MAX_STEPS + 1  # largest verified fitting T, smallest verified missing T
    t = aim
    for _ in range(64):
        if fits(t):
            good = max(good, t)
        else:
            bad = min(bad, t)
        if bad - good <= 1:
            return good
        known = sorted((abs(math.log(x / t)), x) for x in values if 0 < values[x] < math.inf and x > 1)[:2]
        if len(known) == 2 and known[0][1] != known[1][1]:
            (x1, x2) = (known[0][1], known[1][1])
            y1, y2 = (math.log(values[x] / target) for x in (x1, x2))
            slope = (y2 - y1) / math.log(x2 / x1)
            guess = x1 * math.exp(-y1 / slope) if slope > 0 else math.nan
        else:  # one point: eps grows like sqrt(T) for many subsampled steps
            guess = t * (target / values[t]) ** 2 if 0 < values[t] < math.inf else math.nan
        t_next = math.floor(guess) if math.isfinite(guess) and guess < 2 * MAX_STEPS else -1
        if t_next in values:
            t_next += 1
        if not good < t_next < bad or t_next in values:  # outside the bracket: bisect it (or grow it)
            t_next = min(2 * good, MAX_STEPS) if bad > MAX_STEPS else (
                int(math.sqrt(good * bad)) if bad > 4 * good else (good + bad) // 2)
            t_next = min(max(t_next, good + 1), bad - 1)
        if bad > MAX_STEPS and good >= MAX_STEPS:
            break
        t = t_next
    if bad > MAX_STEPS:
        raise CertificationError(f"more than {MAX_STEPS:g} steps meet target_epsilon={target:g}")
    raise CertificationError("the steps search did not converge")  # pragma: no cover (64 halvings of 1e9)


def calibrate_epochs(noise_multiplier: float, target_epsilon: float, delta: float, *,
                     sample_rate: float | None = None, batch_size: int | None = None,
                     dataset_size: int | None = None, k: KDistribution | None = None, sampling: str = "poisson",
                     bound: str | None = None, accountant: str = "auto") -> float:
    """The largest number of epochs whose run (steps = ceil(epochs / rate), as ``ps.dpsgd`` counts)
    meets the target: ``calibrate_steps`` times the sampling rate."""
    schedule = _rate(sample_rate, batch_size, dataset_size, sampling)
    steps = calibrate_steps(noise_multiplier, target_epsilon, delta, sample_rate=schedule.rate, k=k,
                            sampling=sampling, bound=bound, accountant=accountant)
    epochs = steps * schedule.rate
    while math.ceil(epochs / schedule.rate) > steps:  # floating point: never a step more than certified
        epochs = float(np.nextafter(epochs, 0.0))
    return epochs


# -- the mean of K -----------------------------------------------------------------------------------


def calibrate_k_mean(base: Mechanism | PrivacyProfile, target_epsilon: float, delta: float, *,
                     family: Callable[[float], KDistribution] = lambda m: Geometric(mean=m),
                     min_mean: float = 1.0 + 1e-9, bound: str | None = None, accountant: str = "auto",
                     rtol: float = 1e-6, **accountant_options) -> float:
    """The largest mean m with ``certify(base, family(m), delta).epsilon <= target_epsilon``.

    ``family`` maps a mean to a K law (default geometric). The base profile is built once with
    ``accountant``; ``bound`` forces a bound family as in ``certify``. Brent's method on a bracket
    found by doubling; the answer is the safe end (its certificate meets the target). Raises
    ``CertificationError`` when even ``min_mean`` misses the target.
    """
    target, delta = _check_target(target_epsilon, delta, None)
    state = {"profile": privacy_profile(base, accountant=accountant, **accountant_options)}  # built once

    def excess(mean: float) -> float:
        try:
            return certify(state["profile"], family(mean), delta, bound=bound).epsilon - target
        except CertificationError:
            # delta / mean is below the chosen accountant's floor. With a mechanism at hand, switch to
            # "auto" (answers every delta); otherwise this mean cannot be certified, which counts as
            # missing the target (the answer stays valid).
            mechanism = state["profile"].mechanism
            if isinstance(mechanism, Mechanism) and state["profile"].accountant != "auto":
                state["profile"] = privacy_profile(mechanism, accountant="auto")
                return excess(mean)
            return math.inf

    if excess(min_mean) > 0:
        raise CertificationError(f"even mean={min_mean:g} exceeds target_epsilon={target:g} at delta={delta:g}")
    lo = max(min_mean, 1.0)
    for _ in range(60):
        if excess(2 * lo) > 0:
            break
        lo *= 2
    else:
        raise CertificationError("could not bracket the calibration target; the target may be unreachable")
    hi = 2 * lo
    from scipy import optimize  # lazily: scipy.optimize is a tenth of a second of import
    m = optimize.brentq(excess, lo, hi, rtol=rtol)
    while excess(m) > 0:  # safe side: step down until the certificate meets the target
        m = max(lo, m * (1 - rtol))
    return m
