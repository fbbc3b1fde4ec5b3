"""The machinery of the soundness sweep (``python -m benchmarks.soundness``), shared with the tests.

Cases (random Poisson-subsampled Gaussian compositions), privselect's certified bracket per
neighbouring direction, dp-accounting's PLD bracket, exact values (closed form for q = 1, nested
quadrature for k <= 2) and the adjudication of violation candidates. The references of the
sweep's modes (``gdp_mu`` and the exact values of Gaussian compositions, ``cf_bracket``) live here
too. The protocol is described in ``benchmarks/soundness.py``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

import privselect as ps
from privselect.accounting import CertificationError
from tests.support.peers import Part, dp_accounting_pld

RTOL = 1e-9  # float slack when comparing two epsilons
EXACT_RTOL = 1e-7  # slack against the nested-quadrature exact value (its own accuracy)
MAX_PLD_POINTS = 2e6


@dataclass(frozen=True)
class Case:
    sigma: float
    q: float
    k: int
    delta: float

    def mechanism(self) -> ps.Mechanism:
        step = ps.Gaussian(self.sigma) if self.q == 1.0 else ps.Gaussian(self.sigma).poisson_subsample(self.q)
        return step.compose(self.k)


@dataclass
class DirectionResult:
    direction: str
    certified: float
    lower: float
    pld_optimistic: float | None = None
    pld_pessimistic: float | None = None
    exact: float | None = None
    violation: bool = False
    bracket_error: bool = False
    reference_inconsistent: bool = False
    reference_error: bool = False  # a candidate refuted by an exact value
    exact_small_k: float | None = None


@dataclass
class CaseResult:
    case: Case
    method: str = ""
    certified: float = math.nan
    directions: list[DirectionResult] = field(default_factory=list)
    pld_interval: float | None = None
    declined: str | None = None
    pld_error: str | None = None
    seconds: float = 0.0

    @property
    def violations(self) -> int:
        return sum(d.violation for d in self.directions)

    @property
    def bracket_errors(self) -> int:
        return sum(d.bracket_error for d in self.directions)


def sample_cases(n: int, rng: np.random.Generator, *, min_delta: float = 1e-12, max_k: int = 100_000) -> list[Case]:
    """n random cases from the sweep's ranges (see the module doc)."""
    out = []
    for _ in range(n):
        sigma = float(math.exp(rng.uniform(math.log(0.3), math.log(50.0))))
        q = 1.0 if rng.random() < 0.15 else float(math.exp(rng.uniform(math.log(1e-4), 0.0)))
        k = int(round(math.exp(rng.uniform(0.0, math.log(max_k)))))
        delta = float(math.exp(rng.uniform(math.log(min_delta), math.log(1e-2))))
        out.append(Case(sigma, q, max(k, 1), delta))
    return out


def privselect_bounds(case: Case) -> tuple[str, float, dict[str, tuple[float, float]]]:
    """(method, certified eps, {direction: (lower, upper)}); CF below the PRV floor."""
    mech = case.mechanism()
    try:
        prof = ps.privacy_profile(mech, accountant="prv", target_delta=case.delta)
        certified = float(prof.epsilon(case.delta))
        method = "prv"
    except CertificationError:
        prof = ps.privacy_profile(mech, accountant="cf")
        certified = float(prof.epsilon(case.delta))
        method = "cf"
    per = {}
    for curve in prof.curves:
        lo, up = curve.epsilon_bounds(np.array([case.delta]))
        per[curve.direction] = (max(float(lo[0]), 0.0), max(float(up[0]), 0.0))
    return method, certified, per


def pld_epsilons(case: Case, interval: float) -> dict[str, dict[str, float]]:
    """dp-accounting PLD epsilon per direction: {"remove": {"optimistic": .., "pessimistic": ..}, "add": ..}."""
    out: dict[str, dict[str, float]] = {"remove": {}, "add": {}}
    for pessimistic in (True, False):
        dist = dp_accounting_pld([(case.sigma, case.q, case.k)], interval, pessimistic)
        key = "pessimistic" if pessimistic else "optimistic"
        out["remove"][key] = max(float(dist._pmf_remove.get_epsilon_for_delta(case.delta)), 0.0)
        out["add"][key] = max(float(dist._pmf_add.get_epsilon_for_delta(case.delta)), 0.0)
    return out


def gdp_mu(parts) -> float | None:
    """mu of a composition of unsubsampled Gaussian `Part`s, mu^2 = sum steps / sigma^2 (exactly mu-GDP:
    Dong, Roth, Su 2022, Cor. 3.3); None if some part is subsampled or not Gaussian."""
    if all(p.kind == "gaussian" and p.rate == 1.0 for p in parts):
        return math.sqrt(sum(p.steps / p.noise**2 for p in parts))
    return None


def exact_parts_epsilon(parts, delta: float) -> float | None:
    """Exact epsilon(delta) (clipped at 0) of a composition of unsubsampled Gaussian parts, else None."""
    mu = gdp_mu(parts)
    return None if mu is None else max(float(ps.gaussian_epsilon(delta, mu)), 0.0)


def exact_parts_delta(parts, eps: float) -> float | None:
    """Exact delta(eps) of a composition of unsubsampled Gaussian parts, else None."""
    mu = gdp_mu(parts)
    return None if mu is None else float(ps.gaussian_delta(eps, mu))


def wor_rr_delta(p: float, rate: float, steps: int, eps: float) -> float:
    """Exact delta(eps) of ``RandomizedResponse(p).sample_without_replacement(rate).compose(steps)``: the
    product of ``steps`` binary pairs (`wor_rr_pmfs`), a binomial sum over the count of 0 outputs, per
    direction (the max), each term a (1 - e^{eps - loss}) with expm1 (no cancellation)."""
    from scipy.special import gammaln

    from tests.support.peers import wor_rr_pmfs

    big, small = (np.log(np.asarray(pmf)) for pmf in wor_rr_pmfs(p, rate))
    j = np.arange(steps + 1)
    log_choose = gammaln(steps + 1) - gammaln(j + 1) - gammaln(steps - j + 1)
    out = 0.0
    for a, b in ((big, small), (small, big)):
        la = log_choose + j * a[0] + (steps - j) * a[1]
        lb = log_choose + j * b[0] + (steps - j) * b[1]
        terms = np.where(la > eps + lb, np.exp(la) * -np.expm1(np.minimum(eps + lb - la, 0.0)), 0.0)
        out = max(out, math.fsum(terms))
    return out


def exact_epsilon(case: Case) -> float | None:
    """Exact epsilon(delta) for q = 1: mu-GDP with mu = sqrt(k)/sigma (None otherwise)."""
    return exact_parts_epsilon([Part("gaussian", case.sigma, case.q, case.k)], case.delta)


def cf_bracket(mechanism: ps.Mechanism, delta: float, max_work: float | None = 5e6) -> tuple[float, float] | None:
    """privselect's CF accountant alone: its certified (lower, upper) on eps(delta), both proven
    (estimate -/+ its certified error terms); None where CF marks its profile uncertified or cannot
    answer. ``max_work`` caps the work per integration line (it only widens the bracket; None: CF's own cap)."""
    try:
        options = {} if max_work is None else {"max_work": max_work}
        prof = ps.privacy_profile(mechanism, accountant="cf", **options)
        if not prof.certified:
            return None
        lower, upper = prof.epsilon_bounds(delta)
    except (ValueError, ArithmeticError, CertificationError):
        return None
    return max(float(lower), 0.0), max(float(upper), 0.0)


def _below(a: float, b: float, rtol: float = RTOL) -> bool:
    """a < b beyond float slack."""
    return a < b - rtol * max(1.0, abs(b))


def small_k_delta(sigma: float, q: float, k: int, direction: str):
    """Exact delta(eps) of k in {1, 2} Poisson-subsampled Gaussian steps, one direction.

    remove: x ~ P = (1-q) N(0, s^2) + q N(1, s^2), loss l(x) = log(P/Q)(x), Q = N(0, s^2);
    add: x ~ Q, loss -log(P/Q)(x). delta_1(t) = E[(1 - e^{t - l(x)})_+] by adaptive quadrature
    on the region {l > t} (relative tolerance 1e-12), delta_2(eps) = E[delta_1(eps - l(x))]
    (relative tolerance 1e-10). Slow (tens of seconds for k = 2): used only to adjudicate.
    """
    from scipy import integrate, stats

    lq = math.log1p(-q) if q < 1 else -math.inf
    s2 = sigma * sigma

    def log_ratio(x):
        a = (2 * x - 1) / (2 * s2)
        return a if q == 1 else float(np.logaddexp(lq, math.log(q) + a))

    def x_of(level):  # inverse of the increasing log_ratio, level > log(1 - q)
        if q == 1:
            return s2 * level + 0.5
        return s2 * (math.log(math.expm1(level - lq)) + lq - math.log(q)) + 0.5

    width = 60 * sigma + 5
    if direction == "remove":
        def pdf(x):
            return (1 - q) * stats.norm.pdf(x, 0, sigma) + q * stats.norm.pdf(x, 1, sigma)

        loss = log_ratio

        def region(t):
            lo = -width if (q < 1 and t <= lq) else x_of(t)
            return lo, max(lo, 1.0) + width
    else:
        def pdf(x):
            return stats.norm.pdf(x, 0, sigma)

        def loss(x):
            return -log_ratio(x)

        def region(t):
            if q < 1 and -t <= lq:
                return None
            hi = x_of(-t)
            return min(hi, 0.0) - width, hi

    def delta1(t):
        r = region(t)
        if r is None or r[1] <= r[0]:
            return 0.0
        f = lambda x: pdf(x) * -math.expm1(min(t - loss(x), 0.0))  # noqa: E731
        return integrate.quad(f, r[0], r[1], epsabs=0, epsrel=1e-12, limit=400)[0]

    if k == 1:
        return delta1

    def delta2(e):
        f = lambda x: pdf(x) * delta1(e - loss(x))  # noqa: E731
        return integrate.quad(f, -width, width + 1, epsabs=0, epsrel=1e-10, limit=400, points=[0.0, 0.5, 1.0])[0]

    if k == 2:
        return delta2
    raise ValueError(f"small_k_delta supports k in {{1, 2}}, got k={k}")


def small_k_epsilon(case: Case, direction: str, guess: float) -> float:
    """Exact eps(delta) for k <= 2 by Brent's method on `small_k_delta` (may be < 0)."""
    from scipy import optimize

    f = small_k_delta(case.sigma, case.q, case.k, direction)
    g = lambda e: f(e) - case.delta  # noqa: E731
    lo, hi = guess - 0.25, guess + 0.25
    while g(lo) <= 0 and lo > -50:
        lo -= 1.0
    while g(hi) > 0:
        hi += 1.0
    return float(optimize.brentq(g, lo, hi, xtol=1e-12, rtol=1e-14))


def _adjudicate(case: Case, d: DirectionResult, adjudicate: bool) -> None:
    """Resolve a violation or bracket candidate with an exact value (q = 1 is exact already)."""
    if not (d.violation or d.bracket_error) or case.q == 1.0 or case.k > 2 or not adjudicate:
        return
    exact = max(small_k_epsilon(case, d.direction, d.certified), 0.0)
    d.exact_small_k = exact
    if d.violation and not _below(d.certified, exact, EXACT_RTOL):
        d.violation, d.reference_error = False, True
    if d.bracket_error and not _below(exact, d.lower, EXACT_RTOL):
        d.bracket_error, d.reference_error = False, True


def check_case(case: Case, interval: float = 1e-4, *, use_pld: bool = True, adjudicate: bool = True) -> CaseResult:
    """Run one case: privselect vs PLD (and exact for q = 1; k <= 2 candidates adjudicated exactly)."""
    start = time.perf_counter()
    res = CaseResult(case)
    try:
        res.method, res.certified, per = privselect_bounds(case)
    except (ValueError, TypeError) as exc:  # a clear refusal is not a violation; it is counted
        res.declined = f"{type(exc).__name__}: {exc}"
        res.seconds = time.perf_counter() - start
        return res
    exact = exact_epsilon(case)
    pld_values = None
    if use_pld:
        scale = max(res.certified, 1.0)
        res.pld_interval = max(interval, 4 * scale / MAX_PLD_POINTS)
        try:
            pld_values = pld_epsilons(case, res.pld_interval)
        except Exception as exc:  # noqa: BLE001 - the reference failing is recorded, not fatal
            res.pld_error = f"{type(exc).__name__}: {exc}"[:200]
    for direction, (lower, upper) in per.items():
        names = ("remove", "add") if direction == "both" else (direction,)
        for name in names:
            d = DirectionResult(direction=name, certified=upper, lower=lower, exact=exact)
            if pld_values is not None:
                d.pld_optimistic = pld_values[name]["optimistic"]
                d.pld_pessimistic = pld_values[name]["pessimistic"]
                d.reference_inconsistent = _below(d.pld_pessimistic, d.pld_optimistic)
                if not d.reference_inconsistent and _below(upper, d.pld_optimistic):
                    d.violation = True
                if not d.reference_inconsistent and _below(d.pld_pessimistic, lower):
                    d.bracket_error = True
            if exact is not None:
                # the closed form decides alone
                d.violation = _below(upper, exact)
                d.bracket_error = _below(exact, lower)
            _adjudicate(case, d, adjudicate)
            res.directions.append(d)
    # the profile's certified value is the max over directions: check it against each reference too
    if res.directions and _below(res.certified, max(d.certified for d in res.directions)):
        res.directions[0].violation = True
    res.seconds = time.perf_counter() - start
    return res


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    arr = np.asarray(values)
    return {name: float(np.quantile(arr, p)) for name, p in
            (("min", 0.0), ("p05", 0.05), ("median", 0.5), ("p95", 0.95), ("max", 1.0))}


def summarise(results: list[CaseResult]) -> dict:
    """Counts and gap distributions (certified - pessimistic PLD, certified - exact)."""
    dirs = [d for r in results for d in r.directions]
    with_pld = [d for d in dirs if d.pld_pessimistic is not None and not d.reference_inconsistent]
    gap_abs = [d.certified - d.pld_pessimistic for d in with_pld]
    gap_rel = [(d.certified - d.pld_pessimistic) / max(d.pld_pessimistic, 1e-3) for d in with_pld]
    exact_dirs = [d for d in dirs if d.exact is not None]
    exact_rel = [(d.certified - d.exact) / max(d.exact, 1e-3) for d in exact_dirs]
    opt_rel = [(d.pld_pessimistic - d.pld_optimistic) / max(d.pld_pessimistic, 1e-3) for d in with_pld]
    return {
        "mechanisms": len(results),
        "directions_checked": len(dirs),
        "certified": sum(r.declined is None for r in results),
        "declined": sum(r.declined is not None for r in results),
        "declined_messages": sorted({r.declined for r in results if r.declined})[:10],
        "by_method": {m: sum(r.method == m for r in results) for m in ("prv", "cf")},
        "violations": sum(r.violations for r in results),
        "bracket_disagreements": sum(r.bracket_errors for r in results),
        "bracket_disagreements_by_method": {m: sum(r.bracket_errors for r in results if r.method == m)
                                            for m in ("prv", "cf")},
        "reference_errors_found": sum(d.reference_error for d in dirs),
        "adjudicated_exactly": sum(d.exact_small_k is not None for d in dirs),
        "pld_compared": len(with_pld),
        "pld_reference_inconsistent": sum(d.reference_inconsistent for d in dirs),
        "pld_errors": sum(r.pld_error is not None for r in results),
        "exact_compared": len(exact_dirs),
        "gap_to_pessimistic_abs": _quantiles(gap_abs),
        "gap_to_pessimistic_rel": _quantiles(gap_rel),
        "gap_to_exact_rel": _quantiles(exact_rel),
        "pld_optimistic_shortfall_rel": _quantiles(opt_rel),
        "seconds_total": float(sum(r.seconds for r in results)),
    }


def _step_losses(part, direction: str, points: int = 200_001) -> tuple[np.ndarray, np.ndarray]:
    """One step's privacy loss as (values, probabilities) on a fine grid of the output x (midpoint rule):
    remove, x ~ (1-q) B(0) + q B(1) and L = log(1 - q + q b(x - 1)/b(x)); add, x ~ B(0) and L negated
    (B a Gaussian of std sigma or a Laplace of scale b, sensitivity 1). The loss is constant on x <= 0 and
    x >= 1 for Laplace: those cells share one value (its atoms)."""
    from scipy import stats

    s, q = part.noise, part.rate
    law = stats.norm(scale=s) if part.kind == "gaussian" else stats.laplace(scale=s)
    width = (40 * s if part.kind == "gaussian" else 80 * s) + 1
    edges = np.linspace(-width, 1 + width, points + 1)
    x = 0.5 * (edges[1:] + edges[:-1])
    if part.kind == "gaussian":
        shift = (2 * x - 1) / (2 * s * s)
    else:
        shift = (np.abs(x) - np.abs(x - 1)) / s
    loss = shift if q == 1.0 else np.logaddexp(math.log1p(-q), math.log(q) + shift)
    base = np.diff(law.cdf(edges))
    values, probs = (loss, (1 - q) * base + q * np.diff(law.cdf(edges - 1))) if direction == "remove" else (-loss, base)
    keep = probs > 0
    return values[keep], probs[keep]


def tilted_delta(parts, eps: float, cells: int = 1 << 21) -> float:
    """Independent estimate of delta(eps) (max over directions) of a composition of `Part`s by an
    exponentially tilted FFT: with lambda at the saddle point (the tilted sum has mean eps),
    delta(eps) = prod M_j(lambda)^{k_j} E_lambda[e^{-lambda S} (1 - e^{eps - S})_+], and the tilted law of S is
    composed by FFT on a window of +-40 standard deviations around eps, where it has relative
    precision (no absolute floating-point floor, unlike an untilted FFT at delta ~ 1e-14). An estimate
    (midpoint rule in x, linear binning of the losses): used to adjudicate a reference's disagreement."""
    from scipy import optimize
    from scipy.special import logsumexp

    out = 0.0
    for direction in ("remove", "add"):
        laws = [(_step_losses(p, direction), p.steps) for p in parts]
        if sum(k * float(np.max(v)) for (v, _), k in laws) <= eps:
            continue  # the loss never exceeds eps: delta = 0 in this direction

        def tilted_mean(lam):
            total = 0.0
            for (v, w), k in laws:
                a = lam * v + np.log(w)
                total += k * float(np.sum(v * np.exp(a - logsumexp(a))))
            return total - eps

        hi = 1.0
        while tilted_mean(hi) < 0 and hi < 1e6:
            hi *= 2
        lam = optimize.brentq(tilted_mean, 0.0 if tilted_mean(0.0) < 0 else -50.0, hi, xtol=1e-12)
        tilted = []
        var = 0.0
        for (v, w), k in laws:
            a = lam * v + np.log(w)
            log_mgf = float(logsumexp(a))
            p = np.exp(a - log_mgf)
            mean = float(np.sum(p * v))
            var += k * float(np.sum(p * (v - mean) ** 2))
            tilted.append((v, p, k, mean, log_mgf))
        half = 40 * math.sqrt(var) + 1e-9
        h = 2 * half / cells
        log_scale, spectrum = 0.0, np.ones(cells // 2 + 1, dtype=complex)
        for v, p, k, mean, logm in tilted:
            pos = (v - mean) / h  # centred single-step law, linear binning onto the mesh (keeps the mean)
            lo = np.floor(pos)
            frac = pos - lo
            idx = lo.astype(np.int64) % cells
            pmf = np.bincount(idx, weights=p * (1 - frac), minlength=cells) \
                + np.bincount((idx + 1) % cells, weights=p * frac, minlength=cells)
            spectrum *= np.fft.rfft(pmf) ** k
            log_scale += k * logm
        composed = np.fft.irfft(spectrum, cells)
        offset = np.arange(cells)
        offset = np.where(offset < cells // 2, offset, offset - cells) * h
        s = eps + offset  # the centred sum sits at eps (the tilted mean)
        keep = (s > eps) & (composed > 0)
        terms = np.exp(log_scale - lam * s[keep] + np.log(composed[keep])) * -np.expm1(eps - s[keep])
        out = max(out, float(np.sum(terms)))
    return out


def tilted_epsilon(parts, delta: float, hi: float = 64.0, rtol: float = 1e-6) -> float:
    """eps(delta) from `tilted_delta` by Brent's method on [0, hi] (an estimate, like its delta)."""
    from scipy import optimize

    f = lambda e: math.log(max(tilted_delta(parts, e), 1e-300)) - math.log(delta)  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    return float(optimize.brentq(f, 0.0, hi, rtol=rtol))
