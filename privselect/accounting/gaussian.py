"""Certified closed forms of the Gaussian mechanism's privacy profile (mu-GDP): `gaussian_delta` and its
inverse `gaussian_epsilon`, with rigorous rounding brackets (Balle, Wang 2018, Thm 8; Dong, Roth, Su 2022,
Cor. 2.13). They sit below [`profile`][privselect.accounting.profile], whose `GaussianCurve` and
`gdp_profile` are built on them."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .. import _validation as check

__all__ = ["gaussian_delta", "gaussian_epsilon"]


def _like(template, values: np.ndarray):
    """Return a Python float for scalar input, an array otherwise."""
    if np.ndim(template) == 0:
        return float(np.asarray(values).reshape(-1)[0])
    return values


# The exact profile is evaluated as D(x) = phi(x) (R(x) - R(x - mu)) with x = mu/2 - eps/mu, where
# R = Phi / phi is the Mills ratio of the lower tail: since e^eps phi(x - mu) = phi(x), D(x) equals
# Phi(x) - e^eps Phi(x - mu), the closed form above. R(y) = int_0^inf e^{ys - s^2/2} ds, so R and all its
# derivatives are positive and increasing; D increases in x. Negative eps use the symmetry of the pair,
# delta(eps) = 1 - e^eps + e^eps delta(-eps), a sum of two non-negative terms.
#
# Rounding: every evaluation returns a relative error bound ``rel`` built from the accuracy of each
# operation (first order, in units of the unit roundoff _U), plus an absolute 4 * _TINY for the few
# roundings that may land among the subnormals. Inputs enter through x, whose rounding error is bounded
# explicitly (``_x_of``): the certified bracket evaluates D at x -/+ that error (D is monotone), so the
# bracket does not rely on the conditioning of the closed form.

_U = 2.0**-53  # unit roundoff of float64
_TINY = float(np.finfo(float).smallest_subnormal)
# Accuracy assumed of the library functions, relative, in units of _U. Measured maxima against 50-digit
# mpmath (tests/test_profile_extremes.py): erfcx on [-1, inf) 8, exp and expm1 1.1.
_ERFCX_ERR = 16 * _U
_EXP_ERR = 4 * _U
# R(y) = sqrt(pi/2) erfcx(-y/sqrt 2) for y <= 1 (argument >= -1/sqrt 2): erfcx, the rounded argument
# (relative 1.5 _U, condition number of R at most 1.3 for y <= 1), the constant and the product.
_R_ERR = _ERFCX_ERR + 4 * _U
# phi(x) = exp(-p/2) (1 - p_lo/2) / sqrt(2 pi) with x^2 = p + p_lo exactly: exp, the constant, 3 roundings.
_PHI_ERR = _EXP_ERR + 4 * _U
_SQRT_PI_2 = math.sqrt(math.pi / 2)
_INV_SQRT2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2 * math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
# Phi(x) < 1e-349 for x <= -40: below half the smallest subnormal, so delta rounds to 0 there.
_X_ZERO = -40.0
# Phi(x) > 1 - 1e-349 for x >= 40: delta rounds to 1 (and phi(x) underflows).
_X_ONE = 40.0
# R'(s) by Laplace's continued fraction for s < -_CF_FROM (its truncation error is bracketed).
_CF_FROM = 3.0
_CF_DEPTH = 100
# Gauss-Legendre rule with 12 nodes on [-1, 1] (the positive half; nodes and weights correctly rounded
# from 60-digit values), used for R(x) - R(x - mu) = int_{x-mu}^x R'(s) ds when mu is small.
_GL_HALF = np.array([
    (0.1252334085114689, 0.24914704581340277),
    (0.3678314989981802, 0.2334925365383548),
    (0.5873179542866175, 0.20316742672306592),
    (0.7699026741943047, 0.16007832854334622),
    (0.9041172563704749, 0.10693932599531843),
    (0.9815606342467192, 0.04717533638651183),
])
_GL_NODES = np.concatenate([-_GL_HALF[::-1, 0], _GL_HALF[:, 0]])
_GL_HALF_WEIGHTS = 0.5 * np.concatenate([_GL_HALF[::-1, 1], _GL_HALF[:, 1]])


def _mills(y: np.ndarray) -> np.ndarray:
    """R(y) = Phi(y) / phi(y) for y <= 1 (relative error _R_ERR); for larger y only as a rough value."""
    return _SQRT_PI_2 * special.erfcx(-y * _INV_SQRT2)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp split a = hi + lo exactly, each with at most 26 significant bits (|a| < 2**995)."""
    big = 134217729.0 * a
    hi = big - (big - a)
    return hi, a - hi


def _phi(x: np.ndarray) -> np.ndarray:
    """The standard normal density for |x| <= 40 with relative error _PHI_ERR (up to subnormal rounding).

    x^2 is split exactly (Dekker) into p + p_lo, so the rounding of x^2 is not amplified by exp.
    """
    p = x * x
    xh, xl = _split(x)
    p_lo = ((xh * xh - p) + 2.0 * xh * xl) + xl * xl
    return np.exp(-0.5 * p) * (1.0 - 0.5 * p_lo) * _INV_SQRT_2PI


def _mills_prime(s: np.ndarray, with_error: bool) -> tuple[np.ndarray, np.ndarray]:
    """R'(s) = 1 + s R(s) for s <= 1, and a bound on its relative error (0 if not ``with_error``).

    For s >= -_CF_FROM the closed form (its cancellation is at most 22x there, and is in the bound);
    below, Laplace's continued fraction r1 = 1/(t + 2/(t + 3/(t + ...))), t = -s, R' = r1 / (t + r1),
    evaluated backwards (every step adds positive terms, so it is stable) from two bounds on its tail.
    """
    s = np.asarray(s, dtype=float)
    out = np.empty_like(s)
    rel = np.zeros_like(s)
    cf = s < -_CF_FROM
    near = ~cf
    if near.any():
        sn = s[near]
        r = _mills(sn)
        rp = 1.0 + sn * r
        out[near] = rp
        if with_error:
            rel[near] = np.abs(sn) * r * (_R_ERR + _U) / rp + _U
    if cf.any():
        tau = -s[cf]
        # Tail bounds: the ratios r_k = R^(k) / R^(k-1) increase in k (log-convex moments), so
        # r_k (t + r_k) <= k, i.e. r_k <= g(k) = (sqrt(t^2 + 4k) - t) / 2, and r_k >= k / (t + g(k+1)).
        # The backward recurrence is monotone in the tail, so the two tails bracket the limit.
        # About 300 / t^2 + 8 terms make the bracket 1e-15 wide at t = 3 (measured); the depth only
        # affects how tight the bound is, not its validity.
        depth = int(min(_CF_DEPTH, 8 + math.ceil(300.0 / float(tau.min()) ** 2)))
        g = lambda k: 0.5 * (np.sqrt(tau * tau + 4.0 * k) - tau)  # noqa: E731

        def backward(tail: np.ndarray) -> np.ndarray:
            for k in range(depth, 0, -1):
                tail = k / (tau + tail)
            return tail / (tau + tail)

        high = backward(g(depth + 1))
        if with_error:
            low = backward((depth + 1) / (tau + g(depth + 2)))
            out[cf] = 0.5 * (high + low)
            # Rounding: each backward step is relative 2 _U and passes on the relative error of its
            # tail times r_{k+1} / (t + r_{k+1}) < (k + 1) / t^2 (r_{k+1} < (k + 1)/t), and t > 3:
            # r1 is within 3 _U; the last step adds 3 _U.
            rel[cf] = 8 * _U + np.abs(high - low) / (high + low)
        else:
            out[cf] = high
    return out, rel


def _mills_prime_upper(y: np.ndarray) -> np.ndarray:
    """An upper bound on R'(y): 1/(y^2 + 1) for y < 0, 1 + y/phi(y) for y >= 0 (as Phi <= 1).

    For y = -t < 0, R'(y) = 1 - t R(-t) and R(-t) > 1/(t + 1/t) (second approximant of Laplace's
    continued fraction, below the limit; Gordon 1941).
    """
    with np.errstate(over="ignore"):
        return np.where(y < 0, 1.0 / (y * y + 1.0), 1.0 + y * _SQRT_2PI * np.exp(0.5 * y * y))


def _mills_prime_lower(y: np.ndarray) -> np.ndarray:
    """A lower bound on R'(y): 1/(y^2 + 3) for y < 0, R'(0) = 1 for y >= 0 (R' increases).

    For y = -t < 0, R(-t) < (t^2 + 2)/(t^3 + 3t) (third approximant of Laplace's continued fraction,
    above the limit).
    """
    return np.where(y < 0, 1.0 / (y * y + 3.0), 1.0)


def _mills_difference(x: np.ndarray, mu: float, with_error: bool) -> tuple[np.ndarray, np.ndarray]:
    """R(x) - R(x - mu) > 0 for -40 < x <= 1, with a relative error bound.

    When mu is not small next to the scale r = max(1, |x|/2) on which R varies (mu > r/16), the
    difference of two erfcx values loses at most a factor kappa = (R(x) + R(x-mu)) / (R(x) - R(x-mu))
    (at most about 64 there; computed, and in the bound). When mu <= r/16, the integral of R' over
    [x - mu, x] by 12-point Gauss-Legendre: all terms are positive (no cancellation at any mu, down
    to subnormal mu), and the truncation error is bounded through the Bernstein ellipse rho = 4 r / mu
    (|I - I_n| <= h (64/15) M / ((1 - rho^-2) rho^(2n)), M = max |R'| on the ellipse <= R'(its
    rightmost point), since |R'(z)| <= R'(Re z)); with rho >= 64 it is below 1e-20.
    """
    r = np.maximum(1.0, 0.5 * np.abs(x))
    small = mu <= r / 16.0
    out = np.empty_like(x)
    rel = np.zeros_like(x)
    big = ~small
    if big.any():
        xb = x[big]
        r1, r2 = _mills(xb), _mills(xb - mu)
        diff = r1 - r2
        out[big] = diff
        if with_error:
            rel[big] = ((r1 + r2) * _R_ERR + _TINY) / diff + _U
    if small.any():
        xs, rs = x[small], r[small]
        h = 0.5 * mu
        nodes = (xs - h)[:, None] + h * _GL_NODES[None, :]
        values, node_rel = _mills_prime(nodes, with_error)
        total = values @ _GL_HALF_WEIGHTS
        out[small] = mu * total
        if with_error:
            with np.errstate(over="ignore"):
                rho = 4.0 * rs / mu
            rightmost = xs - h + rs + mu * mu / (16.0 * rs)
            with np.errstate(over="ignore"):
                trunc = (32.0 / 15.0) * _mills_prime_upper(rightmost) / _mills_prime_lower(xs - mu) \
                    / ((1.0 - rho**-2) * rho ** (2.0 * _GL_NODES.size))
            # Nodes: each is off by at most 2 _U (|x| + mu) + 2 _TINY, which moves R' by at most that
            # times R''/R' <= 2 min(1, 1/|s|) (the ratio increases in s; at s = 1 it is 1.78), and
            # |s| >= |x| when x <= -2: under 12 _U. Weights: 0.5 _U; products and the 12-term sum:
            # 12 _U; times mu: _U.
            rel[small] = node_rel.max(axis=1) + 26 * _U + trunc
    return out, rel


def _gauss_D(x: np.ndarray, mu: float, with_error: bool) -> tuple[np.ndarray, np.ndarray]:
    """D(x) = Phi(x) - e^{mu (mu/2 - x)} Phi(x - mu) = delta(mu (mu/2 - x)) for x <= mu/2 (+ its error).

    Returns the value and a bound on its relative error (the absolute 4 _TINY is added by the caller).
    """
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    rel = np.zeros_like(x)
    one = x >= _X_ONE
    out[one] = 1.0
    rel[one] = _U  # the true value is below 1
    upper_form = (x > 1.0) & ~one
    if upper_form.any():
        # x > 1 implies mu > 2 and x - mu <= -x < -1: D = 1 - phi(x) (R(-x) + R(x - mu)), where the
        # subtracted term is at most 2 Phi(-x) < 0.32 (no cancellation).
        xu = x[upper_form]
        term = _phi(xu) * (_mills(-xu) + _mills(xu - mu))
        value = 1.0 - term
        out[upper_form] = value
        if with_error:
            rel[upper_form] = (term * (_PHI_ERR + _R_ERR + 2 * _U) + _U * value) / value
    tail = (x > _X_ZERO) & (x <= 1.0)
    if tail.any():
        xt = x[tail]
        diff, diff_rel = _mills_difference(xt, mu, with_error)
        out[tail] = _phi(xt) * diff
        if with_error:
            rel[tail] = _PHI_ERR + diff_rel + _U
    return out, rel


def _x_of(eps: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """x = mu/2 - eps/mu for eps >= 0 and a bound on the error of its rounding.

    Where no intermediate overflows or underflows, x is formed in double-double arithmetic: the
    residual eps - t mu of t = fl(eps/mu) is exact (Dekker's product), mu/2 - t is an exact two-sum,
    and x is within _U (|x| + |s_err| + 3 |t_lo|) (the final sum, the inner one, t_lo's two roundings;
    relative to x, not to eps/mu: large mu keeps full accuracy near mu^2/2). Elsewhere eps/mu is
    within _U |t| and the subtraction adds _U |x|: _U (|t| + |x|). Both get a factor 1 + 4 _U for
    second-order terms and the rounding of the bound itself, plus 2 _TINY for mu/2 or eps/mu among
    the subnormals.
    """
    with np.errstate(over="ignore", under="ignore"):
        t = eps / mu
        x = 0.5 * mu - t
        # two products, not _U (t + |x|): t + |x| overflows near the largest double (eps ~ 1e308)
        err = _U * (1 + 4 * _U) * t + _U * (1 + 4 * _U) * np.abs(x) + 2 * _TINY
        # Double-double only where mu/2 - t cancels (t > 2 |x|); elsewhere it gains a factor 3 at most.
        exact = (t > 2.0 * np.abs(x)) & (t < 2.0**995) & (2.0**-960 < eps) & (eps < 2.0**1020) \
            & (2.0**-960 < mu < 2.0**995)
    if exact.any():
        te, ee = t[exact], eps[exact]
        th, tl = _split(te)
        mh, ml = _split(np.full_like(te, mu))
        prod = te * mu
        prod_err = ((th * mh - prod) + th * ml + tl * mh) + tl * ml  # te * mu = prod + prod_err exactly
        t_lo = ((ee - prod) - prod_err) / mu  # eps/mu = te + t_lo (to 2 _U |t_lo|)
        half = 0.5 * mu
        s = half - te
        back = s - half
        s_err = (half - (s - back)) + (-te - back)  # half - te = s + s_err exactly
        xe = s + (s_err - t_lo)
        x[exact] = xe
        err[exact] = _U * (1 + 4 * _U) * (np.abs(xe) + np.abs(s_err) + 3 * np.abs(t_lo)) + 2 * _TINY
    return x, err


def _gaussian_delta_side(eps: np.ndarray, mu: float, side: str) -> np.ndarray:
    """delta(eps) of mu-GDP: ``side`` is "estimate" (the value), "upper" or "lower" (certified bounds)."""
    e = np.asarray(eps, dtype=float)
    flat = e.reshape(-1)
    a = np.abs(flat)  # delta(eps) for eps < 0 is built from delta(|eps|)
    x, err = _x_of(a, mu)
    with np.errstate(invalid="ignore", over="ignore"):
        if side == "upper":
            x = x + err
        elif side == "lower":
            x = x - err
    # eps/mu overflows (x = -inf, err = inf) only where delta rounds to 0 (np.fmax drops the NaN).
    x = np.fmax(np.minimum(x, _X_ONE), -np.inf)
    d, rel = _gauss_D(x, mu, side != "estimate")
    if side == "upper":
        d = d * (1.0 + rel) + 4 * _TINY
        d[a == np.inf] = 0.0  # delta(+inf) = 0 exactly
    elif side == "lower":
        d = np.maximum(d * (1.0 - rel) - 4 * _TINY, 0.0)
    neg = flat < 0
    if neg.any():
        en = flat[neg]
        gap = -np.expm1(en)  # 1 - e^eps
        scale = np.exp(en)
        dn = d[neg]
        if side == "upper":
            dn = (gap * (1 + _EXP_ERR) + scale * (1 + _EXP_ERR) * dn) * (1 + 3 * _U)
        elif side == "lower":
            dn = (gap * (1 - _EXP_ERR) + scale * (1 - _EXP_ERR) * dn) * (1 - 3 * _U)
        else:
            dn = gap + scale * dn
        d[neg] = np.where(np.isneginf(en), 1.0, dn)  # delta(-inf) = 1 exactly
    return np.minimum(d, 1.0).reshape(e.shape)


def _delta_estimate_scalar(eps: float, mu: float) -> float | None:
    """The point value of delta(eps) for a single eps, in Python floats.

    The same formulas as ``_x_of`` / ``_gauss_D`` (without error bounds): the array path spends
    ~40 us a call on numpy overheads, and sequential callers (bisections on mu) call it many times.
    Returns None where the array path's quadrature is needed (mu <= r/16).
    """
    a = abs(eps)
    if a == math.inf:
        return 0.0 if eps > 0 else 1.0
    t = a / mu
    x = 0.5 * mu - t
    if t > 2.0 * abs(x) and t < 2.0**995 and 2.0**-960 < a < 2.0**1020 and 2.0**-960 < mu < 2.0**995:
        big_t, big_m = 134217729.0 * t, 134217729.0 * mu
        th = big_t - (big_t - t)
        mh = big_m - (big_m - mu)
        tl, ml = t - th, mu - mh
        prod = t * mu
        prod_err = ((th * mh - prod) + th * ml + tl * mh) + tl * ml
        t_lo = ((a - prod) - prod_err) / mu
        half = 0.5 * mu
        s = half - t
        back = s - half
        x = s + (((half - (s - back)) + (-t - back)) - t_lo)
    if not x > _X_ZERO:  # also eps/mu = inf (x = -inf or nan)
        d = 0.0
    elif x >= _X_ONE:
        d = 1.0
    else:
        big = 134217729.0 * x
        xh = big - (big - x)
        xl = x - xh
        p = x * x
        phi = math.exp(-0.5 * p) * (1.0 - 0.5 * (((xh * xh - p) + 2.0 * xh * xl) + xl * xl)) * _INV_SQRT_2PI
        mills = lambda y: _SQRT_PI_2 * float(special.erfcx(-y * _INV_SQRT2))  # noqa: E731
        if x > 1.0:
            d = 1.0 - phi * (mills(-x) + mills(x - mu))
        elif mu <= max(1.0, 0.5 * abs(x)) / 16.0:
            return None
        else:
            d = phi * (mills(x) - mills(x - mu))
    if eps < 0:
        d = -math.expm1(eps) + math.exp(eps) * d
    return min(d, 1.0)


def _finite_mu(mu) -> float:
    """mu of mu-GDP for gaussian_delta / gaussian_epsilon: a positive finite real number."""
    return check.positive("mu", mu)


def gaussian_delta(eps, mu: float) -> np.ndarray:
    """Exact profile of mu-GDP / the Gaussian mechanism with mu = sensitivity/sigma.

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) for every real eps
    (Balle, Wang 2018, Thm 8; Dong, Roth, Su 2022, Cor. 2.13). Evaluated through the Mills
    ratio (no cancellation for small mu, no overflow for huge eps or mu); relative error about
    1e-13 at most. ``mu`` must be a positive finite number. This is a point value: the certified
    bracket of [`GaussianCurve`][privselect.accounting.profile.GaussianCurve] (``gdp_profile``) also bounds its rounding.
    """
    mu = _finite_mu(mu)
    e = check.real_array("eps", eps)
    if e.ndim == 0:
        value = _delta_estimate_scalar(float(e), mu)
        if value is not None:
            return np.float64(value)
    out = _gaussian_delta_side(e, mu, "estimate")
    return out[()] if out.ndim == 0 else out


def _invert_gaussian(delta: np.ndarray, mu: float, side: str) -> np.ndarray:
    """A certified bound on eps(delta) = inf{eps : delta_mu(eps) <= delta} from one side of the bracket.

    ``side="upper"``: a float eps with upper_delta(eps) <= delta (so eps(delta) <= it), the smallest one
    to within an ulp; ``side="lower"``: a float with lower_delta(eps) > delta (so eps(delta) > it).
    The search bracket comes from delta(eps) <= Phi(mu/2 - eps/mu) (an eps above the root) and
    delta(eps) >= 1 - e^eps (eps < log(1 - delta) is below it), widened by doubling steps until the
    curve confirms it; +inf (upper) or -inf (lower) where no float confirms it.
    """
    d = np.asarray(delta, dtype=float).reshape(-1)
    curve = lambda e: _gaussian_delta_side(e, mu, side)  # noqa: E731
    out = np.full(d.shape, np.inf if side == "upper" else -np.inf)
    live = (d > 0) & (d < 1)
    out[d >= 1] = -np.inf
    out[d <= 0] = np.inf
    if not live.any():
        return out
    if side == "upper":  # the upper bound is never below 4 _TINY: no float eps certifies less
        live &= d >= 4 * _TINY
    if not live.any():
        return out
    dl = d[live]
    at_zero = curve(np.zeros(1))[0]
    positive = dl < at_zero  # the root is > 0: 0 is a lower end
    with np.errstate(over="ignore", divide="ignore"):
        above = mu * (0.5 * mu - special.ndtri(dl))
        below = 2.0 * np.log1p(-dl)
    lo = np.where(positive, 0.0, below)
    hi = np.where(positive, np.maximum(above, 0.0), 0.0)
    scale = np.maximum(np.where(np.isfinite(hi), hi, 0.0) - lo, _TINY)

    def widen(point, direction, want_above):
        point = point.copy()
        step = np.maximum(np.abs(point), scale) * 2.0**-40
        bad = np.isfinite(point) & ((curve(point) > dl) != want_above)
        while bad.any():
            idx = np.flatnonzero(bad)
            with np.errstate(over="ignore"):
                point[idx] = point[idx] + direction * step[idx]
                step[idx] = 2.0 * step[idx]
            ok = np.isfinite(point[idx])
            check_idx = idx[ok]
            bad[:] = False
            if check_idx.size:
                bad[check_idx] = (curve(point[check_idx]) > dl[check_idx]) != want_above
        return point

    lo = widen(np.where(np.isfinite(lo), lo, -np.inf), -1.0, True)
    hi = widen(np.where(np.isfinite(hi), hi, np.inf), 1.0, False)
    res = np.where(side == "upper", hi, lo).astype(float)
    active = np.flatnonzero(np.isfinite(lo) & np.isfinite(hi))
    a, b = lo[active], hi[active]
    for _ in range(4 * 1100):  # enough to halve any float range down to adjacent floats
        mid = 0.5 * a + 0.5 * b
        moving = (mid > a) & (mid < b)
        if not moving.any():
            break
        sel = np.flatnonzero(moving)
        ok = curve(mid[sel]) <= dl[active[sel]]
        b[sel] = np.where(ok, mid[sel], b[sel])
        a[sel] = np.where(ok, a[sel], mid[sel])
    res[active] = b if side == "upper" else a
    if side == "upper":
        res = np.where(np.isfinite(hi), res, np.inf)
    else:
        res = np.where(np.isfinite(lo), res, -np.inf)
    out[live] = res
    return out


def gaussian_epsilon(delta, mu: float) -> np.ndarray:
    """Exact eps(delta) of mu-GDP (may be negative), never below the true value.

    The smallest float eps (to within an ulp) at which the certified upper bound on the exact profile
    is <= delta, so it exceeds the true eps(delta) by the rounding of the closed form only (relative
    1e-13 at most). ``mu`` must be a positive finite number and delta lie in [0, 1]; delta = 0 gives
    +inf and delta = 1 gives -inf; +inf also where eps(delta) exceeds the largest double.
    """
    mu = _finite_mu(mu)
    d = check.real_array("delta", delta)
    if ((d < 0) | (d > 1)).any():
        raise ValueError(f"delta must lie in [0, 1], got {delta!r}")
    return _invert_gaussian(d, mu, "upper").reshape(d.shape)
