"""One random-allocation epoch (k = 1) as a privacy loss that dominates it: the t-fold sum on a linear scale.

With one record in exactly one of t steps of a sigma-Gaussian, both neighbouring directions compare
Q = N(0, sigma^2 I_t) with the mixture P = (1/t) sum_i N(e_i, sigma^2 I_t), whose likelihood ratio is
X = S / t, S = Y_1 + ... + Y_t, Y_i = exp((z_i - 1/2) / sigma^2) i.i.d. lognormal under Q (E Y = 1). Since dP/dQ = X,

    remove:  delta(eps) = E_Q[(S/t - e^eps)_+]        add:  delta(eps) = E_Q[(1 - e^eps S/t)_+],

expectations of a convex function of S, increasing (remove) or decreasing (add), and non-negative.

**Dominance.** Let mu be the law of Y restricted to Y <= Y_max (the event E that some Y_i exceeds it adds at most
P(E) = 1 - G(Y_max) F(Y_max)^{t-1} to the remove curve and Q(E) = 1 - F(Y_max)^t to the add curve). A measure nu
on the mesh g N with (i) at least mu's mass, (ii) a stop-loss transform E_nu[(Y - a)_+] >= E_mu[(Y - a)_+] and
(iii) a put transform E_nu[(a - Y)_+] >= E_mu[(a - Y)_+] at every a >= 0 has int phi dnu >= int phi dmu for every
non-negative convex phi that is monotone (write phi as a mixture of constants, (y - a)_+, y or (a - y)_+), and the
class is closed under convolution (condition on one term, then the other). So E_{nu^{*t}}[phi(S)] >= E_{mu^{*t}}
[phi(S)] in both directions (Mueller, Stoyan 2002, Thm 1.5.7 and 1.5.9, for the increasing and decreasing convex
orders). Here nu is the mean-preserving spread of mu onto the mesh (each bin's mass split between its ends so that
its mean is kept: a spread, second order in g), *checked* against the closed forms of mu's transforms at every
mesh point (between mesh points nu's transforms are linear and mu's convex, so the mesh points suffice), with the
checks' rounding counted; what the rounding of the spread loses is restored by padding: mass at 0 (mass and put
transform) and at the next mesh point beyond Y_max (stop-loss transform).

**The sum.** nu^{*t} is one circular convolution by pld's `compose` (its proven l1 floating-point bound fp, and
Chernoff bounds on the mass above and below its window; the remove direction's weight S/t above the window is
bounded by the Chernoff bound of the law that weights one term by y). The epoch's loss, log(S/t) (remove) or
-log(S/t) (add), is then an atomic law whose curve, plus every term above as mass at +inf, lies above the true
curve at every eps, which is all pld's pessimistic discretisation needs (its chords lie above a convex curve
through points above the true one; composition is monotone in each factor's curve: Zhu, Dong, Wang 2022, Lemma 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...errors import CertificationError
from ...memo import quiet_cache
from ..budget import DEFAULT_MAX_MEMORY, require_memory
from ..pld.compose import compose, part_log_mgfs, window
from ..plrv import PrivacyLoss

__all__ = ["EpochLaw", "EpochLoss", "EpochMeshes", "EpochSide", "base_mesh", "epoch_law", "epoch_meshes", "summed_law",
           "MESH_PER_SD", "COARSEST_MESH_PER_SD", "FINE_MESH_POINTS", "MAX_MESH_POINTS", "ADD_MESH_POINTS"]

#: Mesh of Y in units of its standard deviation: the spread adds at most g^2/4 to Var Y per term, a relative
#: 6e-4 here (an estimate of the tightness cost, not part of any bound).
MESH_PER_SD = 0.05
#: Points of one term's mesh past which it is doubled where the doubled mesh holds the whole term within
#: MAX_MESH_POINTS and is at most COARSEST_MESH_PER_SD sd (sigma from about 0.66 to 0.85, whose term's tail is
#: long): the FFTs and the spread scale with it. At sigma 0.8 the doubled mesh (1/8) moves the certificate by at
#: most 0.03% on benchmarks/random_allocation.py's grid and halves its cost.
FINE_MESH_POINTS = 1 << 19
COARSEST_MESH_PER_SD = 0.1
#: Coarsest fine mesh of one term (the coarse variant may go up to MESH_PER_SD sd): where sigma is small the term's bulk (median e^{-1/(2 sigma^2)}) is far narrower
#: than its standard deviation, and the sum's relevant scale at few steps is O(1).
MAX_MESH = 1 / 16
#: Largest mesh of one term (points); past it the term is truncated lower (small sigma: a heavier tail), which
#: raises the epoch's floor P(E) instead of its cost.
MAX_MESH_POINTS = 1 << 22
#: Largest mesh of the add direction's capped term, and of its sum's window (the mesh is finer where they fit).
ADD_MESH_POINTS = 1 << 17
#: Largest composed window (points); past it the window is cut and the Chernoff bound of the mass beyond counts.
MAX_WINDOW_POINTS = 1 << 22
#: P(E) aimed at by the truncation of each term at Y_max (within the mesh budget), and the Chernoff tails of the
#: window.
_TRUNCATION = 1e-14
_WINDOW_TAIL = 1e-20
#: Assumed relative error of scipy's ndtr (as pld's SF_REL_ERROR).
_NDTR_REL = 1e-13
_LONG_UNIT = float(np.finfo(np.longdouble).eps) / 2


@dataclass(frozen=True, eq=False)
class EpochLaw:
    """The remove direction's dominating law of S under P (``p``: the law of S weighted by S/t, on
    s = (p_j0 + j) g) and the add direction's under Q (``add_q``, on s = (add_j0 + j) add_g: the capped term, no
    truncation), each from a circular convolution (at least the law's masses inside its window), with ``*_fp`` its
    proven l1 error and ``*_out`` a bound on its mass outside the window; ``truncation_p`` = P(E)."""

    sigma: float
    steps: int
    g: float
    p_j0: int
    p: np.ndarray
    p_fp: float
    p_out: float
    truncation_p: float
    add_g: float
    add_j0: int
    add_q: np.ndarray
    add_fp: float
    add_out: float
    details: tuple[tuple[str, float], ...]


def _cell_masses(u: np.ndarray, below: np.ndarray, above: np.ndarray) -> np.ndarray:
    """Phi(u_{i+1}) - Phi(u_i) of ascending boundaries u, from Phi(u) = ``below`` and Phi(-u) = ``above``, each
    from the side where both terms are small (its rounding needs no bound: the spread it builds is checked
    against the closed forms afterwards)."""
    right = u[:-1] > 0
    return np.maximum(np.where(right, above[:-1] - above[1:], below[1:] - below[:-1]), 0.0)


def _term_scale(sigma: float) -> tuple[float, float]:
    """(1 / sigma, the standard deviation of one term Y); CertificationError where e^(1/sigma^2) overflows."""
    s = 1.0 / sigma
    if not (math.isfinite(s * s) and s * s < 700):
        raise CertificationError(f"the allocation epoch declines: noise multiplier {sigma!r} is too small for its "
                                 "linear mesh (e^(1/sigma^2) overflows)")
    return s, math.sqrt(math.expm1(s * s))


def _spread(s: float, g: float, n_bins: int, capped: bool, max_memory: float) -> tuple[np.ndarray, dict]:
    """The padded spread nu of one term on g {0..n_bins} (module docstring) and what it cost.

    ``capped=False``: the term truncated at Y_max = n_bins g, checked in mass, stop-loss and put transforms
    (both directions; what lies beyond Y_max is the event E). ``capped=True``: the term capped at Y_max (its mass
    beyond moved down onto Y_max: the add direction's curve only rises, phi being decreasing), checked in mass and
    put transform (the add direction only)."""
    require_memory("allocation", f"one epoch's term on {n_bins} points", 8.0 * n_bins * 40, max_memory)
    y = np.arange(n_bins + 1) * g
    with np.errstate(divide="ignore"):
        ly = np.log(y)
    b, c = (ly + s * s / 2) / s, (ly - s * s / 2) / s  # F(y) = Phi(b), G(y) = E[Y; Y <= y] = Phi(c)
    cdf_f, cdf_g, fbar, gbar = special.ndtr(b), special.ndtr(c), special.ndtr(-b), special.ndtr(-c)
    p = _cell_masses(b, cdf_f, fbar)
    m = _cell_masses(c, cdf_g, gbar)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(p > 0, np.clip((m / p - y[:-1]) / g, 0.0, 1.0), 0.0)
    nu = np.zeros(n_bins + 2, dtype=np.longdouble)  # the last point: the stop-loss pad beyond Y_max
    nu[:-2] += p * (1 - rho)
    nu[1:-1] += p * rho
    fbar_top, gbar_top = float(fbar[-1]), float(gbar[-1])
    if not (capped or gbar_top < 1e-3):  # the mesh budget cut the term's bulk (sigma above 1e4): nothing to gain
        raise CertificationError(f"the allocation epoch declines: {n_bins} mesh points of {g:.3g} cut the "
                                 f"term at {y[-1]:.3g}, inside its bulk (P-mass {gbar_top:.3g} beyond)")
    if capped:
        nu[-2] += fbar_top
    # the closed forms at the mesh points (truncated at Y_max), each rounded up by its error bound
    mass_mu = (1.0 if capped else float(special.ndtr(b[-1]))) * (1 + 2 * _NDTR_REL)
    put_mu = y * cdf_f - cdf_g
    put_mu += 2 * _NDTR_REL * (y * cdf_f + cdf_g) + 8e-16 * (y * cdf_f + cdf_g)
    # nu's transforms by sums of non-negative terms (relative error <= 2 (n + 2) u_long, rounded down)
    down = 1 - 4 * (n_bins + 4) * _LONG_UNIT
    body = nu[:-1]
    head = np.cumsum(body)  # nu([0, y_i])
    put_nu = (g * np.concatenate([[0.0], np.cumsum(head)[:-1]])).astype(float) * down
    put_gap = np.maximum(put_mu - put_nu, 0.0)
    mass_gap = max(mass_mu - float(np.sum(body)) * down, 0.0)
    pad_zero = max(mass_gap, float(np.max(put_gap[1:] / y[1:])))
    nu[0] += pad_zero * (1 + 1e-12)
    info = {"pad_zero": pad_zero}
    if not capped:
        stop_mu = (gbar - gbar_top) - y * (fbar - fbar_top)
        stop_mu += 2 * _NDTR_REL * (gbar + gbar_top + y * (fbar + fbar_top)) + 8e-16 * (gbar + y * fbar)
        tail = np.concatenate([np.cumsum(body[::-1])[::-1][1:], [0.0]])  # nu((y_i, Y_max])
        stop_nu = (g * np.cumsum(tail[::-1])[::-1]).astype(float) * down
        stop_gap = np.maximum(stop_mu - stop_nu, 0.0)
        pad_top = float(np.max(stop_gap / (g * (n_bins + 1 - np.arange(n_bins + 1)))))  # mass at y_{n+1}
        nu[-1] += pad_top * (1 + 1e-12)
        info |= {"pad_top": pad_top, "g_bar_top": gbar_top, "f_bar_top": fbar_top}
    out = nu.astype(float)
    return np.where(out > 0, np.nextafter(out * (1 + 8 * _LONG_UNIT), np.inf), 0.0), info


def summed_law(parts: list, h: float, max_memory: float) -> tuple[int, np.ndarray, float, float]:
    """(j0, masses, l1 error, mass outside the window) of the circular convolution of ``parts`` (pld's
    `compose` asked for long double: for t-fold sums its precise path, whose l1 bound, ~5e-15 at t = 1000 on
    these windows of up to a million points, is 35 times below the long-double FFT's and 500 times below the
    float64 path's; the window sized by Chernoff bounds at `_WINDOW_TAIL`)."""
    mgfs = part_log_mgfs(parts, h)
    a, b = window(mgfs, _WINDOW_TAIL)
    a = max(a, 0.0)
    if not (math.isfinite(a) and math.isfinite(b) and b > a):
        raise CertificationError("the allocation epoch declines: no finite Chernoff window")
    b = min(b, a + (MAX_WINDOW_POINTS - 64) * h)  # past the budget the window gives way: its tail bound grows
    law = compose(parts, [0.0] * len(parts), h, a, b, MAX_WINDOW_POINTS, max_memory, mgfs, long_double=True)
    below = float(law.below) if law.j0 > 0 else 0.0  # a window from S = 0 leaves nothing below (S >= 0)
    return law.j0, np.asarray(law.pmf, dtype=np.longdouble), float(law.fp), float(law.above) + below


@dataclass(frozen=True)
class EpochMeshes:
    """The meshes of one epoch's term: ``s`` = 1 / sigma, ``sd`` its standard deviation, the remove direction's
    mesh ``g`` with ``n_bins`` cells (the term truncated at Y_max = n_bins g), and the add direction's capped
    term on ``add_g`` with ``add_bins`` cells."""

    s: float
    sd: float
    g: float
    n_bins: int
    add_g: float
    add_bins: int


def base_mesh(sd: float) -> float:
    """The finer of MESH_PER_SD x ``sd`` and MAX_MESH, as a power of 2 (so every mesh point is exact)."""
    return 2.0 ** math.floor(math.log2(min(MESH_PER_SD * sd, MAX_MESH)))


def epoch_meshes(sigma: float, steps: int, coarse: bool = False) -> EpochMeshes:
    """The meshes of `epoch_law` (its docstring); CertificationError where e^(1/sigma^2) overflows."""
    t = steps
    s, sd = _term_scale(sigma)
    # P(E) <= G-bar(Y_max) + (t - 1) F-bar(Y_max) <= eta / 2 + eta / 2 (G-bar(y) = Phi-bar((ln y - s^2/2) / s))
    z_p, z_q = -special.ndtri(_TRUNCATION / 2), -special.ndtri(_TRUNCATION / (2 * t))
    y_max = math.exp(max(s * s / 2 + s * z_p, -s * s / 2 + s * z_q))
    # the finer of MESH_PER_SD sd and MAX_MESH, doubled where the term needs more than FINE_MESH_POINTS on it and
    # fits MAX_MESH_POINTS on the doubled one, at most COARSEST_MESH_PER_SD sd (Y_max cut to the budget: small
    # sigma truncates early); ``coarse``: where Y_max does not fit on it, coarser up to MESH_PER_SD sd (a lower
    # truncation floor, a looser curve)
    g = base_mesh(sd)
    if FINE_MESH_POINTS < y_max / g <= 2 * MAX_MESH_POINTS and 2 * g <= COARSEST_MESH_PER_SD * sd:
        g *= 2
    if coarse and y_max / g > MAX_MESH_POINTS:
        g = max(g, min(2.0 ** math.ceil(math.log2(y_max / MAX_MESH_POINTS)),
                       2.0 ** math.floor(math.log2(MESH_PER_SD * sd))))
    # past the mesh budget the truncation gives way (its P(E), Q(E) grow and raise the curve's floor)
    n_bins = min(int(math.ceil(y_max / g)), MAX_MESH_POINTS)
    # the add direction: the term capped where t F-bar <= the truncation target, on a mesh finer by up to 16 where
    # the cap and the sum's window (mean t, 12 sd sqrt t either side) fit in `ADD_MESH_POINTS`
    # (a cap c changes nothing at x = e^eps >= t / c, where (1 - x S / t)_+ = 0 once one term reaches c; 16 t
    # leaves eps >= -log 16 untouched, and below it only the tiny mass beyond c moves)
    cap = min(math.exp(-s * s / 2 + s * z_q), 16.0 * t)
    span = max(cap, t + 12 * sd * math.sqrt(t))
    g_add = min(max(g / 16, 2.0 ** math.ceil(math.log2(span / ADD_MESH_POINTS))), g)
    # any cap is sound for the add direction (a lower one only loosens small eps): within the mesh budget
    return EpochMeshes(s, sd, g, n_bins, g_add, min(int(math.ceil(cap / g_add)), MAX_MESH_POINTS))


@quiet_cache(maxsize=2)  # a law holds up to ~100 MB of long doubles: the fine and coarse one
def epoch_law(sigma: float, steps: int, max_memory: float = DEFAULT_MAX_MEMORY, coarse: bool = False) -> EpochLaw:
    """The dominating laws of S for one epoch of ``steps`` steps at noise multiplier ``sigma`` (module
    docstring): under P, one term of y nu(dy) and t - 1 of nu; and for the add direction, under Q, t terms of the
    capped term's spread on a finer mesh (`epoch_meshes`)."""
    t, mesh = steps, epoch_meshes(sigma, steps, coarse)
    s, g, n_bins = mesh.s, mesh.g, mesh.n_bins
    nu, info = _spread(s, g, n_bins, False, max_memory)
    t_bar_p, t_bar_q = info.pop("g_bar_top"), info.pop("f_bar_top")
    # positions l = j h in compose's units: the term's range maps to [0, 64], so its Chernoff orders (0.05 to
    # 400 per unit l) reach the heavy tail of small sigma as well as the light one of large sigma; and h is at
    # most 1/64, so e^{h x 64 x 400} stays finite in `log_mgf`
    h = 64.0 / max(nu.size, 4096)
    weighted = nu * (np.arange(nu.size) * g)
    weighted = np.where(weighted > 0, np.nextafter(weighted, np.inf), 0.0)
    p_j0, p, p_fp, p_out = summed_law([(weighted, 0, 1)] + ([(nu, 0, t - 1)] if t > 1 else []), h, max_memory)
    add_nu, add_info = _spread(s, mesh.add_g, mesh.add_bins, True, max_memory)
    a_j0, a_q, a_fp, a_out = summed_law([(add_nu, 0, t)], 64.0 / max(add_nu.size, 4096), max_memory)
    details = tuple(sorted(info.items())) + (
        ("mesh_points", float(n_bins)), ("y_max", n_bins * g), ("s_mesh", g),
        ("p_points", float(p.size)), ("p_fp", p_fp), ("p_out", p_out),
        ("add_mesh", mesh.add_g), ("add_points", float(a_q.size)), ("add_fp", a_fp), ("add_out", a_out),
        ("add_pad_zero", add_info["pad_zero"]))
    truncation_p = -math.expm1(math.log1p(-t_bar_p) + (t - 1) * math.log1p(-t_bar_q)) * (1 + 1e-12)
    return EpochLaw(float(sigma), int(steps), g, p_j0, p, p_fp, p_out, truncation_p,
                    mesh.add_g, a_j0, a_q, a_fp, a_out, details)


class EpochLoss(PrivacyLoss):
    """One direction of an `EpochLaw` as a privacy loss: atoms at log(s/t) (remove) or log(t/s) (add); its
    primary tails rounded up (plus their l1 error) and secondary tails rounded down (minus their l1 error and
    mass outside the window), the primary's mass outside the window, S <= 0 (add) and the truncation at +inf.
    Its curve lies above the epoch's at every eps; it is for pld's pessimistic (upper) discretisation only, and
    ``lower`` is the loss for the optimistic one (None: no lower law, the composed lower end is 0)."""

    def __init__(self, law: EpochLaw, direction: str, lower: PrivacyLoss | None = None) -> None:
        if direction not in ("remove", "add"):
            raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
        self.law, self.direction, self._lower = law, direction, lower
        t = float(law.steps)
        if direction == "remove":
            # one law: P(S > t x) - x Q(S > t x) = sum (1 - t x / s) p_s over the region (Q = (t/s) P atom by atom),
            # terms in [0, 1]: the l1 error of p moves it by at most p_fp (at +inf with the mass outside the window)
            self._primary, self._secondary = EpochSide.pair(law.p_j0, law.p, law.g, t, direction)
            self._inf = (law.p_fp + law.p_out + law.truncation_p) * (1 + 1e-12)
        else:
            # likewise Q(S < t/x) - x E_Q[S/t; S < t/x] = sum (1 - x s/t) q_s over the region
            self._primary, self._secondary = EpochSide.pair(law.add_j0, law.add_q, law.add_g, t, direction)
            self._inf = (law.add_fp + law.add_out + self._primary.at_zero) * (1 + 1e-12)

    def optimistic_loss(self) -> PrivacyLoss | None:
        return self._lower

    @property
    def inf_mass(self) -> float:  # type: ignore[override]
        return self._inf

    @property
    def secondary_neg_inf_mass(self) -> float:
        return 0.0

    @property
    def support(self) -> tuple[float, float]:
        return (min(self._primary.loss[0], self._secondary.loss[0]),
                max(self._primary.loss[-1], self._secondary.loss[-1]))

    def sf(self, x):
        return self._primary.tail(x, +1)

    def sf_secondary(self, x):
        return self._secondary.tail(x, -1)

    def cdf(self, x):
        return np.maximum(self._primary.total - self._primary.tail(x, -1), 0.0)

    def cdf_secondary(self, x):
        return np.maximum(self._secondary.total - self._secondary.tail(x, -1), 0.0)

    def argument_error(self, x):
        """0: both tails decide an atom by the same computed loss (log of an exact mesh point over t, within an
        ulp of the true one), so an atom within an ulp of x moves P(L > x) - e^x Q(L > x) by at most
        q |s/t - e^x| <= 4 u e^x q (P = (s/t) Q atom by atom for the exact sums), inside the discretisation's
        relative slack on e^x Q (pld's ``SF_REL_ERROR``). Moving the argument instead would count such an atom in
        P and not in Q, a spurious bump in the curve."""
        return np.zeros(np.shape(x))

    def log_phi(self, z):
        z = np.asarray(z, dtype=complex)
        mass = self._primary.mass.astype(float)
        with np.errstate(divide="ignore"):
            terms = np.log(mass)[None, :] + 1j * z.reshape(-1, 1) * self._primary.loss[None, :]
        return special.logsumexp(terms, axis=1).reshape(z.shape)


class EpochSide:
    """The atoms of one law (Q or P) of an `EpochLaw` in one direction, in ascending loss, with suffix sums."""

    def __init__(self, mass: np.ndarray, loss: np.ndarray, at_zero: float) -> None:
        self.mass, self.loss, self.at_zero = mass, loss, at_zero
        self.suffix = np.concatenate([np.cumsum(self.mass[::-1])[::-1], [np.longdouble(0)]])
        self.total = float(self.suffix[0])
        # sums of non-negative long-double terms: relative error <= (n + 2) u_long; the double result, 1 ulp
        self.rel = 2.0 * (self.mass.size + 4) * _LONG_UNIT + 2.0 ** -52

    @classmethod
    def pair(cls, j0: int, masses: np.ndarray, g: float, t: float, direction: str) -> tuple[EpochSide, EpochSide]:
        """The law's atoms on s = (j0 + j) g at losses log(s/t) (remove) or log(t/s) (add), and the other law of the
        same sum, atom by atom: P = (s/t) Q, so the remove direction's Q weights P's atoms by t/s and the add
        direction's P weights Q's by s/t."""
        s = (j0 + np.arange(masses.size)) * g
        keep = (masses > 0) & (s > 0)
        at_zero = float(np.sum(masses[s <= 0])) if direction == "add" else 0.0
        order = slice(None) if direction == "remove" else slice(None, None, -1)
        s, mass = s[keep][order], masses[keep][order]
        loss = np.log(s / t) if direction == "remove" else np.log(t / s)
        ratio = (t / s) if direction == "remove" else (s / t)
        return cls(mass, loss, at_zero), cls(mass * ratio.astype(np.longdouble), loss, at_zero)

    def tail(self, x, sign: int) -> np.ndarray:
        """The mass at losses > x, rounded up (sign +1) or down (-1)."""
        first = np.searchsorted(self.loss, np.asarray(x, dtype=float), side="right")
        return (self.suffix[first] * (1 + sign * self.rel)).astype(float)
