"""An independent reference for delta(eps) of many Poisson-subsampled Gaussian steps at tiny delta: an
exponentially tilted FFT (numpy and scipy only; no privselect code).

The remove-direction privacy loss of one step is l(X) = log(1 - q + q exp(mu X - mu^2 / 2)) with
X ~ (1 - q) N(0, 1) + q N(mu, 1); the add direction's is -l(Y), Y ~ N(0, 1). Of T steps,
delta(eps) = E[(1 - exp(eps - L))_+], L the sum of T independent losses.

Tilting (the saddle-point/importance identity): for a one-step pmf pi on a mesh h Z and any theta,
pi_theta(k) = pi(k) e^(theta k h) / M(theta) is again a pmf, and exactly
pi^{*T}(k) = M(theta)^T e^(-theta k h) pi_theta^{*T}(k). With theta chosen so that the tilted sum has its
mean near eps, the FFT that composes pi_theta carries a relative (not an absolute) error at the losses that
make up delta(eps), so delta(eps) ~ 1e-12 is computed to many digits; a plain double-precision FFT of pi
itself (dp-accounting's PLD) has an absolute error of ~1e-16 per bucket, its floor.

The one-step pmf: X on a midpoint grid of width dx over [-40, 40 + mu], each point's mass split between the
two mesh points around its loss in proportion to the distance (the split keeps every point's mean). The
result is an estimate, not a bound; its discretisation error is measured by halving h (the tests do).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["subsampled_gaussian_epsilon", "subsampled_gaussian_log_delta"]


def _one_step(mu: float, q: float, direction: str, h: float, dx: float) -> tuple[int, np.ndarray]:
    """(k0, log pmf) of one step's loss on the mesh h * (k0 + arange(n))."""
    x = np.arange(-40.0, 40.0 + mu, dx) + dx / 2
    log_phi = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
    with np.errstate(divide="ignore"):
        log_mix_ratio = np.logaddexp(np.log1p(-q), math.log(q) + mu * x - mu * mu / 2)  # l(x)
    if direction == "remove":  # X ~ (1 - q) N(0,1) + q N(mu,1): density phi(x) e^{l(x)}
        loss, log_w = log_mix_ratio, log_phi + log_mix_ratio + math.log(dx)
    else:  # add: Y ~ N(0,1), loss -l(y)
        loss, log_w = -log_mix_ratio, log_phi + math.log(dx)
    log_w -= np.logaddexp.reduce(log_w)  # the grid's mass (1 - ~1e-300) renormalised
    pos = loss / h
    lo = np.floor(pos)
    frac = pos - lo
    k0 = int(lo.min())
    idx = (lo - k0).astype(np.int64)
    n = int(idx.max()) + 2
    # the split in linear space, scaled per point by its own max so that tiny masses keep their digits
    shift = log_w.max()
    w = np.exp(log_w - shift)
    pmf = np.bincount(idx, w * (1 - frac), n) + np.bincount(idx + 1, w * frac, n)
    with np.errstate(divide="ignore"):
        return k0, np.log(pmf) + shift


def _tilted_log_sum(k0: int, log_pmf: np.ndarray, steps: int, theta: float, h: float, width: float):
    """(mesh losses s, log pmf of the T-fold sum at s), computed through the theta-tilted law on a window of
    +-``width`` tilted standard deviations around its mean."""
    s1 = h * (k0 + np.arange(log_pmf.size))
    log_t = log_pmf + theta * s1
    log_m = np.logaddexp.reduce(log_t[np.isfinite(log_t)])
    p = np.exp(log_t - log_m)  # the tilted one-step pmf
    mean = float(np.sum(p * s1))
    var = float(np.sum(p * (s1 - mean) ** 2))
    centre = steps * mean
    half = width * math.sqrt(steps * var) + 10 * h
    n = 1 << math.ceil(math.log2(2 * half / h + log_pmf.size))
    # place the one-step pmf so that the T-fold sum's window [centre - half, centre + half] maps to the
    # circular grid: index j of the result is the loss s = h * (start + j) modulo n
    start = math.floor((centre - half) / h)
    spec = np.fft.rfft(np.concatenate([p, np.zeros(n - p.size)]))
    comp = np.fft.irfft(spec ** steps, n)  # the T-fold sum at h * (T k0 + j) modulo n
    j = (np.arange(n) + start - steps * k0) % n
    s = h * (start + np.arange(n))
    tilted = comp[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        return s, steps * log_m - theta * s + np.log(np.where(tilted > 0, tilted, np.nan))


def _theta_for(k0: int, log_pmf: np.ndarray, steps: int, target: float, h: float) -> float:
    """The tilt whose T-fold sum has its mean at ``target`` (bisection on the tilted mean)."""
    s1 = h * (k0 + np.arange(log_pmf.size))
    ok = np.isfinite(log_pmf)

    def mean(theta):
        log_t = log_pmf[ok] + theta * s1[ok]
        p = np.exp(log_t - log_t.max())
        return steps * float(np.sum(p * s1[ok]) / np.sum(p))

    lo, hi = 0.0, 1.0
    while mean(hi) < target:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mean(mid) < target else (lo, mid)
    return (lo + hi) / 2


def subsampled_gaussian_log_delta(noise: float, rate: float, steps: int, eps: np.ndarray, direction: str = "remove",
                                  h: float = 1e-4, dx: float = 2e-5, width: float = 30.0) -> np.ndarray:
    """log delta(eps) of ``steps`` Poisson-subsampled Gaussian(noise) steps (mu = 1 / noise), one direction,
    by one tilted FFT (tilt chosen for the sum's mean at max(eps) + 1)."""
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    mu = 1.0 / noise
    k0, log_pmf = _one_step(mu, rate, direction, h, dx)
    theta = _theta_for(k0, log_pmf, steps, float(eps.max()) + 1.0, h)
    s, log_sum = _tilted_log_sum(k0, log_pmf, steps, theta, h, width)
    out = np.empty(eps.shape)
    for i, e in enumerate(eps):
        keep = (s > e) & np.isfinite(log_sum)
        out[i] = np.logaddexp.reduce(log_sum[keep] + np.log1p(-np.exp(e - s[keep])))
    return out


def subsampled_gaussian_epsilon(noise: float, rate: float, steps: int, delta: float, bracket: tuple[float, float],
                                direction: str = "remove", **options) -> float:
    """eps(delta): the root of log delta(eps) = log delta in ``bracket`` (log-linear interpolation on 65 points
    of one tilted FFT)."""
    grid = np.linspace(bracket[0], bracket[1], 65)
    log_d = subsampled_gaussian_log_delta(noise, rate, steps, grid, direction, **options)
    target = math.log(delta)
    if not log_d[0] >= target >= log_d[-1]:
        raise ValueError(f"delta={delta} is not bracketed: delta({bracket[0]})={math.exp(log_d[0])}, "
                         f"delta({bracket[1]})={math.exp(log_d[-1])}")
    return float(np.interp(-target, -log_d, grid))
