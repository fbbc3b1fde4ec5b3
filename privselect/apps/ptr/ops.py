"""One-posterior-sample (OPS) ridge regression: sampler, exact privacy, data-dependent bounds.

OPS (Wang 2018; Dimitrakakis et al. 2017) releases one draw from the ridge posterior

    theta ~ N(theta_hat, (gamma H)^-1),  H = X^T X + lam I,  theta_hat = H^-1 X^T y,

with ridge strength ``lam`` (lambda) and inverse temperature ``gamma``. Public bounds
||x|| <= B_x and |y| <= B_y are enforced by clipping before anything here is called.

Exact privacy for one added/removed record [derived for privselect; checked by the tests].
For neighbours S and S u {z}, z = (x, y), let mu = x^T H(S)^-1 x (leverage of z w.r.t. the
smaller set) and rho = sqrt(gamma) |y - x^T theta_hat(S)| (its scaled residual). The privacy
loss depends on theta only through the scalar u = sqrt(gamma)(y - x^T theta):

    l(u) = log p/p' = u^2/2 - rho^2/(2(1+mu)) - log(1+mu)/2,
    u ~ N(rho, mu) under p (posterior on S),  u ~ N(rho/(1+mu), mu/(1+mu)) under p' (on S u z),

so every f-divergence between the two d-dimensional posteriors equals the one between these
two 1-d Gaussians ([`ops_hockey_stick`][privselect.apps.ptr.ops.ops_hockey_stick], checked against direct quadrature and Monte Carlo
of the d-dimensional posteriors in ``tests/test_ptr_ops.py``). Three epsilon forms:

* [`ops_epsilon_exact`][privselect.apps.ptr.ops.ops_epsilon_exact]: the smallest eps with max(delta_A, delta_B)(eps) <= delta, by
  bisection on certified upper bounds of the two hockey-stick divergences (the default);
* [`ops_epsilon_safe`][privselect.apps.ptr.ops.ops_epsilon_safe]: the closed form rho^2 mu/(2(1+mu)) + rho sqrt(2 mu log(2/delta))
  + mu log(2/delta), proved on the event |w| <= sqrt(2 log(2/delta)) (see its docstring);
* [`ops_epsilon_wang`][privselect.apps.ptr.ops.ops_epsilon_wang]: the closed form of Wang's reference code (AdaOPS). It is NOT a valid
  bound (the tests exhibit delta 20-60x the nominal one); kept only to document that.

Data-dependent bounds [derived; checked by the tests]. For a data set X and every neighbour
(added or removed record), mu <= mu_+ = B_x^2 / h_- and |residual| <= R_+ =
(B_y + B_x ||theta_hat(X)||)(1 + B_x^2/h_-), with h_- = max(lam, lam + lambda_min(X^T X) - B_x^2)
(Weyl for the removed record); the statistic u(X) = log(B_y + B_x ||theta_hat(X)||) has local
sensitivity at most log(1 + B_x^2/h_-) ([`ops_local_bounds`][privselect.apps.ptr.ops.ops_local_bounds]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg, special

from ... import _validation as check
from ...memo import quiet_cache

__all__ = [
    "ridge_solution",
    "sample_ops",
    "ops_hockey_stick",
    "ops_delta",
    "ops_epsilon_exact",
    "ops_epsilon_safe",
    "ops_epsilon_wang",
    "ops_epsilon",
    "ops_renyi",
    "ops_passes",
    "ops_gamma",
    "ops_mu_bound",
    "ops_rho_bound",
    "OPSLocalBounds",
    "ops_local_bounds",
    "bounds_from_statistics",
    "clip_records",
]

_EPS = np.finfo(float).eps
#: Grid of the monotonicity guard (design notes Sec. 3.4(c)): eps is evaluated at (t mu, s rho),
#: t, s in this set, and the maximum is used.
GUARD = (0.25, 0.5, 0.75, 1.0)


# ----------------------------------------------------------------------------------------
# Clipping and the ridge posterior
# ----------------------------------------------------------------------------------------


def clip_records(X: np.ndarray, y: np.ndarray | None, x_bound: float, y_bound: float):
    """The data-independent, per-record clipping rule of every privselect regressor.

    ``x <- x * min(1, B_x / ||x||_2)`` (rows keep their direction) and ``y <- clip(y, -B_y, B_y)``.
    A per-record map, so it does not change the neighbouring relation.
    """
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(norms > x_bound, x_bound / norms, 1.0)
    Xc = X * factor[:, None]
    if y is None:
        return Xc, None
    return Xc, np.clip(np.asarray(y, dtype=float), -y_bound, y_bound)


def ridge_solution(X: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(theta_hat, L): the ridge solution H^-1 X^T y and the lower Cholesky factor of H = X^T X + alpha I."""
    d = X.shape[1]
    H = X.T @ X + alpha * np.eye(d)
    L = np.linalg.cholesky(H)
    theta = linalg.cho_solve((L, True), X.T @ y)
    return theta, L


def sample_ops(theta_hat: np.ndarray, chol: np.ndarray, gamma: float, rng: np.random.Generator, size=None):
    """Draw from N(theta_hat, (gamma H)^-1) given the lower Cholesky factor ``chol`` of H.

    theta = theta_hat + L^-T z / sqrt(gamma), z ~ N(0, I): Cov = L^-T L^-1 / gamma = H^-1 / gamma.
    (Using the transposed factor the other way round, as the MATLAB reference code does with
    ``(R')\\z``, gives covariance (R R^T)^-1/gamma != H^-1/gamma; design notes Sec. 9.3.)
    ``size=None`` returns one draw of shape (d,); ``size=n`` returns (n, d).
    """
    d = theta_hat.shape[0]
    n = 1 if size is None else int(size)
    z = rng.standard_normal((d, n))
    draws = theta_hat[:, None] + linalg.solve_triangular(chol.T, z, lower=False) / math.sqrt(gamma)
    return draws[:, 0] if size is None else draws.T


# ----------------------------------------------------------------------------------------
# Exact privacy of one added/removed record
# ----------------------------------------------------------------------------------------


def _log_two_sided_tail(c_minus_m: np.ndarray, c_plus_m: np.ndarray, s: np.ndarray) -> np.ndarray:
    """log P(|u| > c) for u ~ N(m, s^2), m >= 0, given c - m and c + m (computed stably)."""
    return np.logaddexp(special.log_ndtr(-c_minus_m / s), special.log_ndtr(-c_plus_m / s))


def ops_hockey_stick(epsilon, mu, rho) -> tuple[np.ndarray, np.ndarray]:
    """Certified upper bounds on (H_{e^eps}(p || p'), H_{e^eps}(p' || p)) for one neighbour pair.

    p is the OPS posterior on the smaller data set S, p' on S u {z}; ``mu`` is the leverage of z
    w.r.t. S and ``rho`` its scaled residual (module docstring). Closed forms (derived; checked
    against quadrature and d-dimensional Monte Carlo in the tests):

        delta_A = P_p(|u| > c) - e^eps P_p'(|u| > c),      c^2 = 2 eps + rho^2/(1+mu) + log(1+mu)
        delta_B = P_p'(|u| < c_B) - e^eps P_p(|u| < c_B),  c_B^2 = -2 eps + rho^2/(1+mu) + log(1+mu)

    (delta_B = 0 if c_B^2 <= 0). Evaluated in log space with cancellation-free differences;
    a rounding slack of 64 ulp of the larger term is added so the results are upper bounds.
    Vectorised over broadcastable arrays.
    """
    eps, mu, rho = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (epsilon, mu, rho)))
    rho = np.abs(rho)
    l1 = np.log1p(mu)
    s = np.sqrt(mu)
    s2 = np.sqrt(mu / (1 + mu))
    m2 = rho / (1 + mu)
    base = rho * rho / (1 + mu) + l1  # c^2 - 2 eps = c_B^2 + 2 eps

    # delta_A: P_p(|u| > c) - e^eps P_p'(|u| > c)
    c = np.sqrt(2 * eps + base)
    c_minus_rho = (2 * eps + l1 - rho * rho * mu / (1 + mu)) / (c + rho)
    c_minus_m2 = (2 * eps + l1 + rho * rho * mu / (1 + mu) ** 2) / (c + m2)
    log_a = _log_two_sided_tail(c_minus_rho, c + rho, s)
    log_b = eps + _log_two_sided_tail(c_minus_m2, c + m2, s2)
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.exp(log_a)
        delta_a = a * -np.expm1(np.minimum(log_b - log_a, 0.0))
        delta_a = delta_a + 64 * _EPS * (a + np.exp(np.minimum(log_b, 700.0)))
    delta_a = np.where(log_b >= log_a, 64 * _EPS * 2 * np.exp(np.minimum(log_a, 0.0)), delta_a)

    # delta_B: P_p'(|u| < c_B) - e^eps P_p(|u| < c_B)
    cb2 = base - 2 * eps
    cb = np.sqrt(np.maximum(cb2, 0.0))
    # P(|u| < c) for u ~ N(m, s^2): Phi((c-m)/s) - Phi((-c-m)/s)
    in_p2 = _interval_prob(cb, m2, s2, cb2 - m2 * m2)
    in_p = _interval_prob(cb, rho, s, cb2 - rho * rho)
    with np.errstate(over="ignore", invalid="ignore"):
        e_in_p = np.exp(np.minimum(eps, 700.0)) * in_p
        delta_b = in_p2 - e_in_p + 64 * _EPS * (in_p2 + e_in_p)
    delta_b = np.where(cb2 > 0, np.clip(delta_b, 0.0, 1.0), 0.0)
    return np.clip(delta_a, 0.0, 1.0), delta_b


def _interval_prob(c: np.ndarray, m: np.ndarray, s: np.ndarray, c2_minus_m2: np.ndarray) -> np.ndarray:
    """P(|u| < c), u ~ N(m, s^2), with c - m = (c^2 - m^2)/(c + m) to avoid cancellation."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c_minus_m = np.where(c + m > 0, c2_minus_m2 / (c + m), 0.0)
    upper = c_minus_m / s
    lower = (-c - m) / s
    # Phi(upper) - Phi(lower); when upper > 0 use 1 - Phi(-upper) - Phi(lower) (both tails small)
    direct = special.ndtr(upper) - special.ndtr(lower)
    tails = 1.0 - special.ndtr(-upper) - special.ndtr(lower)
    return np.clip(np.where(upper > 0, tails, direct), 0.0, 1.0)


def ops_delta(epsilon, mu, rho) -> np.ndarray:
    """max(delta_A, delta_B)(eps): the OPS privacy profile of one neighbour pair (upper bound)."""
    a, b = ops_hockey_stick(epsilon, mu, rho)
    return np.maximum(a, b)


def ops_epsilon_safe(mu, rho, delta) -> np.ndarray:
    """Closed-form eps(delta) for OPS: rho^2 mu/(2(1+mu)) + rho sqrt(2 mu log(2/delta)) + mu log(2/delta).

    Proof (design notes Sec. 3.4(b), re-derived here). Under p write u = rho + sqrt(mu) w,
    w ~ N(0,1): l = rho^2 mu/(2(1+mu)) + rho sqrt(mu) w + mu w^2/2 - log(1+mu)/2, which is below the
    bound on |w| <= t = sqrt(2 log(2/delta)); P(|w| > t) <= e^{-t^2/2} = delta/2. Under p',
    -l <= rho^2 mu/(2(1+mu)^2) + log(1+mu)/2 + rho sqrt(mu)|w|/(1+mu)^{3/2}, also below the bound on
    the same event (log(1+mu)/2 <= mu/2 <= mu log(2/delta)). Both hockey-sticks are at most the
    probability of the loss exceeding eps, so delta_A, delta_B <= delta/2. Non-decreasing in mu
    and rho, so bounds on (mu, rho) can be plugged in.
    """
    mu, rho, delta = (np.asarray(a, dtype=float) for a in (mu, rho, delta))
    log_term = np.log(2.0 / delta)
    return rho * rho * mu / (2 * (1 + mu)) + rho * np.sqrt(2 * mu * log_term) + mu * log_term


def ops_epsilon_wang(mu, rho, delta) -> np.ndarray:
    """The closed form coded in Wang's reference AdaOPS: NOT a valid (eps, delta) bound.

    rho^2 mu/(2(1+mu)) + rho sqrt(mu log(2/delta)) + (1 + log(2/delta)) mu/2 (design notes
    Sec. 3.4(a), transcribed from ``adaops.m``). It misses factors of 2 in the last two terms;
    ``tests/test_ptr_ops.py`` shows the exact delta at this eps exceeding the nominal delta by an
    order of magnitude. Provided only to document the discrepancy; never used for privacy.
    """
    mu, rho, delta = (np.asarray(a, dtype=float) for a in (mu, rho, delta))
    log_term = np.log(2.0 / delta)
    return rho * rho * mu / (2 * (1 + mu)) + rho * np.sqrt(mu * log_term) + (1 + log_term) * mu / 2


def ops_epsilon_exact(mu, rho, delta, *, iterations: int = 80) -> np.ndarray:
    """Smallest eps >= 0 with max(delta_A, delta_B)(eps) <= delta (numerically certified).

    Bisection on [0, eps_safe] (the safe closed form is a proven valid eps); the upper end of the
    final bracket is returned, so ``ops_delta(result, mu, rho) <= delta`` holds up to the
    rounding slack already included in [`ops_hockey_stick`][privselect.apps.ptr.ops.ops_hockey_stick]. Where the numerics cannot
    certify eps_safe itself (only when delta is near the rounding slack) eps_safe is returned.
    Vectorised over broadcastable arrays.
    """
    mu, rho, delta = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (mu, rho, delta)))
    hi = np.asarray(ops_epsilon_safe(mu, rho, delta), dtype=float).copy()
    lo = np.zeros_like(hi)
    ok_at_zero = ops_delta(0.0, mu, rho) <= delta
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        good = ops_delta(mid, mu, rho) <= delta
        hi = np.where(good, mid, hi)
        lo = np.where(good, lo, mid)
    return np.where(ok_at_zero, 0.0, hi)


def _guarded(values_fn, mu, rho) -> np.ndarray:
    """max over the guard grid (t mu, s rho) of ``values_fn`` (broadcast on trailing axes)."""
    t = np.asarray(GUARD)
    mu = np.asarray(mu, dtype=float)[..., None, None] * t[:, None]
    rho = np.asarray(rho, dtype=float)[..., None, None] * t[None, :]
    return values_fn(mu, rho).max(axis=(-2, -1))


def ops_epsilon(mu, rho, delta, mode: str = "exact") -> np.ndarray:
    """Data-dependent eps of OPS at bounds (mu_+, rho_+): valid for every pair with mu <= mu_+, rho <= rho_+.

    ``mode="safe"``: [`ops_epsilon_safe`][privselect.apps.ptr.ops.ops_epsilon_safe] (proved monotone). ``mode="exact"``: the maximum of
    [`ops_epsilon_exact`][privselect.apps.ptr.ops.ops_epsilon_exact] over the guard grid {(t mu_+, s rho_+)} (design notes Sec. 3.4(c);
    monotonicity of the exact eps in (mu, rho) is checked numerically by the tests), and
    ``ops_epsilon_safe`` where mu_+ > 1 (outside the checked regime).
    """
    if mode == "safe":
        return ops_epsilon_safe(mu, rho, delta)
    if mode != "exact":
        raise ValueError(f"mode must be 'exact' or 'safe', got {mode!r}")
    mu, rho, delta = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (mu, rho, delta)))
    exact = _guarded(lambda m, r: ops_epsilon_exact(m, r, delta[..., None, None]), mu, rho)
    return np.where(mu > 1.0, ops_epsilon_safe(mu, rho, delta), exact)


def ops_passes(epsilon, mu, rho, delta, mode: str = "exact") -> np.ndarray:
    """``ops_epsilon(mu, rho, delta, mode) <= epsilon``, evaluated without bisection (vectorised).

    For the exact mode: eps_exact <= eps iff delta(eps) <= delta at every guard point.
    """
    eps, mu, rho, delta = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (epsilon, mu, rho, delta)))
    safe_ok = ops_epsilon_safe(mu, rho, delta) <= eps
    if mode == "safe":
        return safe_ok
    if mode != "exact":
        raise ValueError(f"mode must be 'exact' or 'safe', got {mode!r}")
    worst = _guarded(lambda m, r: ops_delta(eps[..., None, None], m, r), mu, rho)
    return np.where(mu > 1.0, safe_ok, worst <= delta)


def ops_renyi(alpha, mu, rho) -> tuple[np.ndarray, np.ndarray]:
    """(D_alpha(p || p'), D_alpha(p' || p)) for one neighbour pair (closed forms; design notes Sec. 3.2).

    D_alpha(p||p') = alpha rho^2 mu / (2(1+mu)(1-(alpha-1)mu)) - log(1+mu)/2
                     - log(1-(alpha-1)mu)/(2(alpha-1)),  +inf unless alpha < 1 + 1/mu;
    D_alpha(p'||p) = alpha rho^2 mu / (2(1+mu)(1+alpha mu)) + alpha log(1+mu)/(2(alpha-1))
                     - log(1+alpha mu)/(2(alpha-1)).
    Data-dependent only: OPS-PTR does not have a data-independent RDP curve.
    """
    a, mu, rho = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (alpha, mu, rho)))
    r2 = rho * rho
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = 1 - (a - 1) * mu > 0
        q = np.where(ok, 1 - (a - 1) * mu, 1.0)
        fwd = a * r2 * mu / (2 * (1 + mu) * q) - 0.5 * np.log1p(mu) - np.log(q) / (2 * (a - 1))
        fwd = np.where(ok, fwd, np.inf)
        bwd = a * r2 * mu / (2 * (1 + mu) * (1 + a * mu)) + a * np.log1p(mu) / (2 * (a - 1)) \
            - np.log1p(a * mu) / (2 * (a - 1))
    return fwd, bwd


def ops_gamma(mu: float, residual: float, epsilon: float, delta: float, mode: str = "exact") -> float:
    """Largest gamma with ``ops_epsilon(mu, sqrt(gamma) * residual, delta, mode) <= epsilon`` (0 if none).

    Bisection on rho = sqrt(gamma) * residual; the returned gamma is verified to pass.
    Data-independent when ``mu`` and ``residual`` are public bounds.
    """
    mu = check.positive("mu", mu)
    residual = check.positive("residual", residual)
    epsilon = check.positive("epsilon", epsilon)
    delta = check.open_unit("delta", delta)

    def ok(rho: float) -> bool:
        return bool(ops_passes(epsilon, mu, rho, delta, mode))

    if not ok(0.0):
        return 0.0
    hi = 1.0
    while ok(hi):
        hi *= 2.0
        if hi > 1e12:
            break
    lo = 0.0 if not ok(hi / 2) else hi / 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-10 * hi:
            break
    gamma = (lo / residual) ** 2
    while gamma > 0 and not ok(math.sqrt(gamma) * residual):  # pragma: no cover - rounding guard
        gamma *= 1 - 1e-9
    return gamma


def ops_rho_bound(epsilon: float, mu, delta: float, mode: str = "exact", *, iterations: int = 40) -> np.ndarray:
    """Largest rho with ``ops_passes(epsilon, mu, rho, delta, mode)`` (0 where even rho = 0 fails); vectorised in mu.

    Bisection in rho; the returned value always passes (the lower end of the final bracket), so
    gamma = (rho / R)^2 is private for a residual bound R. Used by OPS-PTR's ``gamma="auto"``.
    """
    mu = np.asarray(mu, dtype=float)
    ok0 = np.asarray(ops_passes(epsilon, mu, 0.0, delta, mode), dtype=bool)
    lo = np.zeros_like(mu)
    hi = np.ones_like(mu)
    for _ in range(64):  # double hi until it fails (rho is bounded: eps grows like rho^2 mu)
        grow = ok0 & np.asarray(ops_passes(epsilon, mu, hi, delta, mode), dtype=bool)
        if not grow.any():
            break
        lo = np.where(grow, hi, lo)
        hi = np.where(grow, 2 * hi, hi)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        good = np.asarray(ops_passes(epsilon, mu, mid, delta, mode), dtype=bool)
        lo = np.where(good, mid, lo)
        hi = np.where(good, hi, mid)
    return np.where(ok0, lo, 0.0)


@quiet_cache(maxsize=1024)
def ops_mu_bound(epsilon: float, delta: float, mode: str = "exact") -> float:
    """Largest leverage bound mu with ``ops_epsilon(mu, 0, delta, mode) <= epsilon`` (bisection in log mu; <= 1).

    The mu floor of OPS: a ridge h with B_x^2/h above this value fails the OPS test whatever the
    residual (rho = 0), so no gamma > 0 is private there. Data-independent.
    """
    lo, hi = -40.0, 0.0
    if ops_passes(epsilon, math.exp(hi), 0.0, delta, mode):
        return 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if ops_passes(epsilon, math.exp(mid), 0.0, delta, mode):
            lo = mid
        else:
            hi = mid
    return math.exp(lo)


# ----------------------------------------------------------------------------------------
# Data-dependent bounds over all neighbours of X
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OPSLocalBounds:
    """Bounds over every add/remove neighbour of a data set X (module docstring).

    ``h_minus`` lower-bounds lambda_min(H(S)) of the smaller set S of every pair; ``mu_bound`` =
    B_x^2/h_-; ``residual_bound`` = R_+; ``log_norm`` = u(X) = log(B_y + B_x ||theta_hat(X)||) and
    ``log_norm_sensitivity`` = log(1 + B_x^2/h_-) bounds |u(X) - u(X')| for every neighbour X'.
    Floats, or arrays when built by `bounds_from_statistics` from arrays (vectorised).
    """

    h_minus: float | np.ndarray
    mu_bound: float | np.ndarray
    residual_bound: float | np.ndarray
    log_norm: float | np.ndarray
    log_norm_sensitivity: float | np.ndarray


def _h_minus(alpha: float, lambda_min: float, x_bound: float) -> float:
    return max(alpha, alpha + lambda_min - x_bound ** 2)


def ops_local_bounds(X: np.ndarray, y: np.ndarray, alpha: float, x_bound: float, y_bound: float,
                     lambda_min: float | None = None) -> OPSLocalBounds:
    """Exact (non-private) data-dependent bounds at X; inputs must already satisfy the bounds.

    ``lambda_min`` is lambda_min(X^T X) (computed if None); a smaller value (e.g. a private lower
    bound) gives valid, looser bounds.
    """
    if lambda_min is None:
        lambda_min = float(max(np.linalg.eigvalsh(X.T @ X)[0], 0.0))
    theta, _ = ridge_solution(X, y, alpha)
    return bounds_from_statistics(alpha, lambda_min, math.log(y_bound + x_bound * float(np.linalg.norm(theta))),
                                  x_bound)


def bounds_from_statistics(alpha: float, lambda_min, log_norm, x_bound: float) -> OPSLocalBounds:
    """OPSLocalBounds from (a bound on) lambda_min(X^T X) and (a bound on) u(X) (vectorised if arrays)."""
    lam_min = np.asarray(lambda_min, dtype=float)
    h = np.maximum(alpha, alpha + lam_min - x_bound ** 2)
    inflate = 1.0 + x_bound ** 2 / h
    u = np.asarray(log_norm, dtype=float)
    if h.ndim == 0 and u.ndim == 0:
        return OPSLocalBounds(float(h), float(x_bound ** 2 / h), float(math.exp(u) * inflate), float(u),
                              float(math.log(inflate)))
    return OPSLocalBounds(h, x_bound ** 2 / h, np.exp(u) * inflate, u, np.log(inflate))
