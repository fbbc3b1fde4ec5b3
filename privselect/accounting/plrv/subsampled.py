"""Privacy loss of a Poisson-subsampled mechanism, both directions (Zhu, Dong, Wang 2022, Thm 11)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...errors import CertificationError
from .gaussian import GaussianLoss
from .laplace import LaplaceLoss
from .loss import Atoms, PrivacyLoss
from .quadrature import ContinuousQuadrature, _gauss_legendre_normal, _gauss_tail_radius, _leggauss, _norm_logpdf


def _inverse_subsampling_map(y: np.ndarray, rate: float) -> np.ndarray:
    """z(y) = log((e^y - 1 + q) / q), the base loss that maps to subsampled loss y.

    Defined for y > log(1 - q); returns -inf at and below that point.
    """
    y = np.asarray(y, dtype=float)
    floor = math.log1p(-rate) if rate < 1 else -math.inf
    out = np.where(y <= floor, -np.inf, np.nan)  # NaN stays NaN
    large = y > 1.0
    small = (y > floor) & ~large  # each formula only where it is the one taken
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out[small] = np.log1p(np.expm1(y[small]) / rate)
        out[large] = y[large] - math.log(rate) + np.log1p(-(1 - rate) * np.exp(-y[large]))
    return out


def _subsampling_map(base_loss: np.ndarray, rate: float) -> np.ndarray:
    """g(l) = log(1 - q + q e^l), stable for large and very negative l: log1p(q expm1(l)) wherever expm1(l) is
    finite (the form l + log q + log1p(...) cancels to a relative 1e-10 where g is small, l > 0 at a small q)."""
    l = np.asarray(base_loss, dtype=float)
    with np.errstate(over="ignore"):
        small = np.log1p(rate * np.expm1(np.minimum(l, _EXPM1_FINITE)))
        large = l + math.log(rate) + np.log1p((1 - rate) / rate * np.exp(-np.maximum(l, _EXPM1_FINITE)))
    return np.where(l > _EXPM1_FINITE, large, small)


#: Below this, expm1 is finite in double precision (and q expm1(l) + 1 holds g without cancellation).
_EXPM1_FINITE = 700.0


@dataclass(frozen=True)
class SubsampledLoss(PrivacyLoss):
    """PLRV of a Poisson-subsampled symmetric base, one direction (Zhu, Dong, Wang 2022, Thm 11).

    ``direction="remove"``: pair (M, Q) with M = (1-q) Q + q P, L = g(L_b), g(l) = log(1-q+q e^l).
    ``direction="add"``: pair (Q, M), L = -g(L_b) with L_b distributed under Q.
    CDFs follow Gopi, Lee, Wutschitz 2021, Prop. B.4; log-phi integrates over the base loss law
    (exact sums for discrete bases, quadrature for continuous ones, see `base_quadrature`).
    """

    base: PrivacyLoss
    rate: float
    direction: str  # "remove" | "add"

    @property
    def support(self) -> tuple[float, float]:
        lo, hi = self.base.support
        g_lo, g_hi = _subsampling_map(np.array([lo, hi]), self.rate)
        if self.direction == "remove":
            return (float(g_lo), float(g_hi))
        return (float(-g_hi), float(-g_lo))

    # Laws. For "remove", the primary measure is M and the secondary is Q:
    #   M[g(L_b) <= y] = q P[L_b <= z] + (1-q) Q[L_b <= z],  Q[g(L_b) <= y] = Q[L_b <= z].
    # For "add", the primary measure is Q and the secondary is M, and L = -g(L_b):
    #   Q[-g(L_b) <= y] = Q[L_b >= z(-y)] = Q[L_b > z(-y)] + Q[L_b = z(-y)].

    def _base_upper_tail(self, zz: np.ndarray, secondary: bool) -> np.ndarray:
        """P or Q of [L_b >= zz] (closed at zz, atoms included)."""
        at = self.base.atoms()
        if secondary:
            tail = self.base.sf_secondary(zz)
            masses = at.secondary
        else:
            tail = self.base.sf(zz)
            masses = at.primary
        if at.locations.size:
            tail = tail + (masses[None, :] * (at.locations[None, :] == zz.reshape(-1, 1))).sum(axis=1).reshape(
                zz.shape
            )
        return tail

    def _base_lower_tail(self, zz: np.ndarray, secondary: bool) -> np.ndarray:
        """P or Q of [L_b < zz] (open at zz)."""
        at = self.base.atoms()
        cdf = self.base.cdf_secondary(zz) if secondary else self.base.cdf(zz)
        if at.locations.size:
            masses = at.secondary if secondary else at.primary
            cdf = cdf - (masses[None, :] * (at.locations[None, :] == zz.reshape(-1, 1))).sum(axis=1).reshape(
                zz.shape
            )
        return cdf

    def _base_loss(self, y: np.ndarray) -> np.ndarray:
        """z(y), made exact at the base's atoms: where y lies below (above) the image g(a) of an atom a, z lies
        below (above) a, and z = a where y = g(a). Rounding of z alone could cross a and move the atom's whole
        mass to the wrong side of an event (the add direction's sf next to the bottom of its support)."""
        zz = _inverse_subsampling_map(y, self.rate)
        locations = self.base.atoms().locations
        if not locations.size:
            return zz
        images = _subsampling_map(locations, self.rate)
        for a, g_a in zip(locations, images):
            zz = np.where(y < g_a, np.minimum(zz, np.nextafter(a, -np.inf)), zz)
            zz = np.where(y > g_a, np.maximum(zz, np.nextafter(a, np.inf)), zz)
            zz = np.where(y == g_a, a, zz)
        return zz

    def argument_error(self, x: np.ndarray) -> np.ndarray:
        """A backward error of the inverse map z(y) (y = x, or -x for "add"), per argument (u = 2^-53, every
        rounding within an ulp, a factor 4 to spare). Where y <= 1 the map is z = log1p(w), w = expm1(y) / q:
        the roundings of expm1 and of the quotient are a relative 2u in expm1(y), i.e. y moved by at most
        2u |expm1(y)| e^{-y}; that of log1p a relative u in z, i.e. y moved by u |z| dy/dz with
        dy/dz = (e^y - 1 + q) e^{-y} (< 1). At the bottom of the support (y <= fl(log1p(-q)), z = -inf) the
        rounding of log(1 - q) moves y by u |log(1 - q)|. Where y > 1 the sum y - log q + log1p(-(1 - q) e^{-y})
        rounds to within u (2 |y| + 3 |log q| + 4) of z, and dy/dz < 1. So near the bulk of a small-q step
        (y ~ q) the move is ~ u (q + |y|), not the old constant 4u x 4: at q = 1e-6 that constant moved each
        step's value by ~3e-9 (a relative 1%), which composed into an eps bracket no finer mesh could close.
        A base with atoms (``_base_loss`` pins z at them) keeps the old uniform bound,
        4u (2 + |x| + 2 max(1, q / (1 - q)))."""
        x = np.asarray(x, dtype=float)
        u, q = 2.0 ** -53, self.rate
        odds = q / (1 - q) if q < 1 else 0.0
        if not 0 < q < 1 or self.base.atoms().locations.size:
            return 4 * u * (2 + np.abs(x) + 2 * max(1.0, odds))
        y = x if self.direction == "remove" else -x
        floor = math.log1p(-q)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            z = _inverse_subsampling_map(y, q)
            ys = np.clip(y, floor, 1.0)
            em, inv = np.expm1(ys), np.exp(-ys)
            slope = (np.abs(em + q) + 4 * u) * inv  # dy/dz, rounded up
            small = 2 * np.abs(em) * inv + np.where(np.isfinite(z), np.abs(z) * slope, 0.0)
            large = 2 * np.abs(y) + 3 * abs(math.log(q)) + 4
            bound = np.where(y > 1, large, np.where(y > floor, small, 0.0)) + 2 * abs(floor)
        return np.where(np.isnan(x), np.nan, 4 * u * (bound * (1 + 1e-6)) + 1e-300)

    def _mixture(self, f_primary: np.ndarray, f_secondary: np.ndarray) -> np.ndarray:
        return self.rate * f_primary + (1 - self.rate) * f_secondary

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        if self.direction == "remove":
            zz = self._base_loss(x)
            return self._mixture(self.base.cdf(zz), self.base.cdf_secondary(zz))
        zz = self._base_loss(-x)
        return np.where(np.isneginf(zz), 1.0, self._base_upper_tail(zz, secondary=True))

    def sf(self, x):
        x = np.asarray(x, dtype=float)
        if self.direction == "remove":
            zz = self._base_loss(x)
            return self._mixture(self.base.sf(zz), self.base.sf_secondary(zz))
        zz = self._base_loss(-x)
        return np.where(np.isneginf(zz), 0.0, self._base_lower_tail(zz, secondary=True))

    def tail_pair(self, x):
        """(``sf(x)``, ``sf_secondary(x)``) from one inverse map and one secondary base tail (the same values)."""
        x = np.asarray(x, dtype=float)
        if self.direction == "remove":
            zz = self._base_loss(x)
            secondary = self.base.sf_secondary(zz)
            return self._mixture(self.base.sf(zz), secondary), secondary
        zz = self._base_loss(-x)
        outside = np.isneginf(zz)
        secondary = self._base_lower_tail(zz, secondary=True)
        mixed = self._mixture(self._base_lower_tail(zz, False), secondary)
        return np.where(outside, 0.0, secondary), np.where(outside, 0.0, mixed)

    def cdf_secondary(self, x):
        x = np.asarray(x, dtype=float)
        if self.direction == "remove":
            return self.base.cdf_secondary(self._base_loss(x))
        zz = self._base_loss(-x)
        upper = self._mixture(self._base_upper_tail(zz, False), self._base_upper_tail(zz, True))
        return np.where(np.isneginf(zz), 1.0, upper)

    def sf_secondary(self, x):
        x = np.asarray(x, dtype=float)
        if self.direction == "remove":
            return self.base.sf_secondary(self._base_loss(x))
        zz = self._base_loss(-x)
        lower = self._mixture(self._base_lower_tail(zz, False), self._base_lower_tail(zz, True))
        return np.where(np.isneginf(zz), 0.0, lower)

    def atoms(self) -> Atoms:
        at = self.base.atoms()
        if not at.locations.size:
            return at
        g = _subsampling_map(at.locations, self.rate)
        mixed = self._mixture(at.primary, at.secondary)
        if self.direction == "remove":
            return Atoms(g, mixed, at.secondary)
        order = np.argsort(-g)
        return Atoms(-g[order], at.secondary[order], mixed[order])

    # -- characteristic function -------------------------------------------------------

    def base_quadrature(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Nodes ``l_j`` and log-weights ``log w_j`` with sum_j w_j f(l_j) ~ E_P[f(L_b)].

        Atoms are exact; a Gaussian base uses Gauss-Legendre with ``n`` nodes on +-40 standard
        deviations (tilting by e^{v L} moves the mass by v*mu standard deviations);
        the Laplace continuous part uses Gauss-Legendre with ``n`` nodes on [-mu, mu].
        """
        at = self.base.atoms()
        nodes, log_weights = [at.locations], [np.log(at.primary)]
        if isinstance(self.base, GaussianLoss):
            x, log_w = _gauss_legendre_normal(n)
            nodes.append(self.base.mu**2 / 2 + self.base.mu * x)
            log_weights.append(log_w)
        elif isinstance(self.base, LaplaceLoss):
            mu = self.base.mu
            x, w = _leggauss(n)
            l = mu * x
            nodes.append(l)
            log_weights.append(np.log(mu * w / 4) + (l - mu) / 2)
        return np.concatenate(nodes), np.concatenate(log_weights)

    def log_phi_quadrature(self, z: np.ndarray, nodes: np.ndarray, log_weights: np.ndarray) -> np.ndarray:
        """log-phi of this direction from a quadrature (nodes, log-weights) of the base primary law.

        remove: E_M[e^{iz g(L_b)}] = E_P[e^{iz g(L_b)} (q + (1-q) e^{-L_b})];
        add:    E_Q[e^{-iz g(L_b)}] = E_P[e^{-iz g(L_b)} e^{-L_b}].
        """
        z = np.asarray(z, dtype=complex)
        g = _subsampling_map(nodes, self.rate)
        if self.direction == "remove":
            log_w = log_weights + np.logaddexp(math.log(self.rate), math.log1p(-self.rate) - nodes)
            expo = 1j * z.reshape(-1, 1) * g[None, :]
        else:
            log_w = log_weights - nodes
            expo = -1j * z.reshape(-1, 1) * g[None, :]
        return special.logsumexp(expo + log_w[None, :], axis=1).reshape(z.shape)

    def quadrature_terms(self, v: float, nodes: np.ndarray, log_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(log a_j, L_j) with E[e^{(v - iu) L}] ~ sum_j a_j e^{-iu L_j} for a base-law rule.

        ``nodes``/``log_weights`` are a quadrature of E_P[f(L_b)] (as for
        `log_phi_quadrature`); ``L_j`` is this direction's loss at each node and
        ``a_j > 0`` includes the change of measure and the tilt e^{v L_j}.
        """
        g = _subsampling_map(nodes, self.rate)
        if self.direction == "remove":
            loss = g
            log_w = log_weights + np.logaddexp(math.log(self.rate), math.log1p(-self.rate) - nodes)
        else:
            loss = -g
            log_w = log_weights - nodes
        return log_w + v * loss, loss

    def log_phi(self, z, n: int = 400):
        """log-phi by quadrature over the base law (exact for discrete bases)."""
        nodes, log_weights = self.base_quadrature(n)
        return self.log_phi_quadrature(z, nodes, log_weights)

    # -- facts for Fourier inversion (characteristic-function accountant) ----------------

    def _base_continuous(self) -> tuple[Callable[[np.ndarray], np.ndarray], tuple[float, float], float] | None:
        """(log-density of the base continuous part under P, its support, bound on |(log f)''|)."""
        base = self.base
        if isinstance(base, GaussianLoss):
            mu = base.mu
            log_norm = math.log(mu) + 0.5 * math.log(2 * math.pi)
            return (lambda l: -((l - mu * mu / 2) ** 2) / (2 * mu * mu) - log_norm), (-math.inf, math.inf), 1 / mu**2
        if isinstance(base, LaplaceLoss):
            mu = base.mu
            return (lambda l: (l - mu) / 2 - math.log(4.0)), (-base.mu, base.mu), 0.0
        return None

    def _log_continuous_tv(self, v: float,
                           base_part: tuple[Callable[[np.ndarray], np.ndarray], tuple[float, float], float]) -> float:
        """log of a bound on the total variation of the tilted continuous density.

        In the base-loss variable l, the density of L (continuous part, tilted by e^{vL}) is
        w(l) = exp(F(l)) with F(l) = c g(l) - 2 l + log f(l) - log q, c = v + 2 (remove) or
        1 - v (add), f the base density under P and g(l) = log(1 - q + q e^l). g' is a logistic
        function, so for a Gaussian base F' = c g' - 2 - (l - mu^2/2)/mu^2 has at most three
        zeros, all where the line lies in the range of c g'; for a Laplace base F'' = c g'' has
        one sign. Either way w has at most two local maxima (counting the jumps at the ends of
        a bounded support), so TV(w) <= 4 sup w. sup F over the interval holding the critical
        points is bounded by the maximum on a grid plus K h^2 / 8, K >= |F''| = |c| g'' + K_f,
        g'' <= 1/4. Total variation is invariant under the monotone change of variable l -> L.
        ``base_part`` is `_base_continuous` (not None).
        """
        log_f, (lo, hi), curvature = base_part
        q = self.rate
        c = v + 2.0 if self.direction == "remove" else 1.0 - v
        if math.isinf(lo) and isinstance(self.base, GaussianLoss):  # (an unbounded support is a Gaussian base's)
            # Gaussian base: critical points of F lie in this interval
            mu2 = self.base.mu ** 2
            lo, hi = mu2 / 2 + mu2 * (min(0.0, c) - 2), mu2 / 2 + mu2 * (max(0.0, c) - 2)
        grid = np.linspace(lo, hi, 2001)
        h = (hi - lo) / 2000
        values = c * _subsampling_map(grid, q) - 2 * grid + log_f(grid) - math.log(q)
        bound = float(np.max(values)) + (abs(c) / 4 + curvature) * h * h / 8
        return math.log(4.0) + bound + 1e-12 * (1 + abs(bound))

    def continuous_variation(self) -> float:
        """TV of the untilted density (`_log_continuous_tv` at v = 0); 0 for atomic bases."""
        base_part = self._base_continuous()
        if base_part is None:
            return 0.0
        log_tv = self._log_continuous_tv(0.0, base_part)
        return math.exp(log_tv) if log_tv < 709.0 else math.inf  # a valid (if useless) bound

    def log_fourier_envelope(self, v, u):
        """Total-variation bound TV(w) / |u| (see `_log_continuous_tv`).

        Not capped by the tilted mass of the continuous part (callers cap it); ``-inf`` for
        randomized-response and pure-DP bases, which have no continuous part.
        """
        u = np.asarray(u, dtype=float)
        base_part = self._base_continuous()
        if base_part is None:
            return np.full(u.shape, -np.inf)
        with np.errstate(divide="ignore"):
            return self._log_continuous_tv(v, base_part) - np.log(np.abs(u))

    def continuous_quadrature(self, v: float, u_max: float, refine: int = 0,
                              max_nodes: int = 1 << 22) -> ContinuousQuadrature:
        """Fine and coarse rules for E_P[f(L_b); continuous part of the base], tilted by e^{vL}.

        For use with `log_phi_quadrature` at arguments ``z = -u - iv``, ``|u| <= u_max``.
        Gaussian base: trapezoid rule in the standard-normal variable with step
        ``h <= pi / (u_max mu g'_max + 14)`` (``g'_max`` over the region holding all but
        e^-46 of the tilted mass), on a range whose omitted tilted mass is bounded by Gaussian
        tails (``truncation``, a rigorous bound); the coarse rule takes every other node, so
        it already resolves the fastest oscillation. Laplace base: composite Gauss-Legendre on
        [-mu, mu] with 24 (fine) and 18 (coarse) nodes per panel, panels short enough that the
        phase u g and the log-weight change by at most ~8 across each (no truncation).
        Each ``refine`` step doubles the node count. The difference between the rules is an
        estimate (not a bound) of the error of the coarse rule.
        """
        empty = np.zeros(0)
        if self._base_continuous() is None:
            return ContinuousQuadrature(empty, empty, empty, empty, 0.0)
        q = self.rate
        if isinstance(self.base, LaplaceLoss):
            mu = self.base.mu
            span = float(np.ptp(_subsampling_map(np.array([-mu, mu]), q)))
            panels = int(math.ceil(((u_max + v + 2) * span + mu) / 8 + 1)) * 2**refine
            if 24 * panels > max_nodes:
                raise CertificationError(f"quadrature needs {24 * panels} > {max_nodes} nodes (u_max={u_max}, v={v})")
            edges = np.linspace(-mu, mu, panels + 1)

            def rule(m: int) -> tuple[np.ndarray, np.ndarray]:
                x, w = special.roots_legendre(m)
                half = np.diff(edges)[:, None] / 2
                l = ((edges[:-1] + edges[1:])[:, None] / 2 + half * x[None, :]).reshape(-1)
                return l, (np.log(half * w[None, :])).reshape(-1) + (l - mu) / 2 - math.log(4.0)

            fine, coarse = rule(24), rule(18)
            return ContinuousQuadrature(fine[0], fine[1], coarse[0], coarse[1], 0.0)
        assert isinstance(self.base, GaussianLoss)  # a continuous base part that is not Laplace: Gaussian
        mu = self.base.mu
        log_tol = math.log(1e-17)
        if self.direction == "remove":
            # integrand (P-expectation in x): phi(x) e^{g(l) - l} e^{v g(l)}, l = mu^2/2 + mu x
            log_mass_low = v * math.log1p(-q)  # E_M[e^{vg}] >= (1-q)^v
            r_lo = _gauss_tail_radius(log_tol + log_mass_low - math.log(2.0))
            # x < -mu/2 (l < 0): integrand <= phi(x + mu)
            lo_bound = special.log_ndtr(-r_lo)
            # l >= 0: e^g <= e^l, integrand <= e^{v(v+1)mu^2/2} phi(x - v mu)
            log_pa = v * (v + 1) * mu * mu / 2
            r_a = _gauss_tail_radius(log_tol + log_mass_low - math.log(2.0) - log_pa)
            # l >= l0 = log((1-q)/q): e^g <= 2 q e^l and e^{g-l} <= 2q
            log_pb = (1 + v) * math.log(2 * q) + log_pa
            r_b = _gauss_tail_radius(log_tol + log_mass_low - math.log(2.0) - log_pb)
            x_l0 = (math.log1p(-q) - math.log(q) - mu * mu / 2) / mu
            x_hi_a, x_hi_b = v * mu + r_a, max(v * mu, x_l0) + r_b
            if x_hi_a <= x_hi_b:
                x_hi, hi_bound = x_hi_a, log_pa + special.log_ndtr(-r_a)
            else:
                x_hi, hi_bound = x_hi_b, log_pb + special.log_ndtr(-(x_hi_b - v * mu))
            x_lo = -mu - r_lo
        else:
            # integrand: phi(x) e^{-l} e^{-v g(l)}; l < 0: <= (1-q)^{-v} phi(x + mu); l >= 0: <= phi(x + mu)
            log_mass_low = -math.log(2.0)  # E_Q[e^{-vg}] >= Q[L_b <= 0] >= 1/2
            log_p = -v * math.log1p(-q)
            r_lo = _gauss_tail_radius(log_tol + log_mass_low - math.log(2.0) - log_p)
            r_hi = _gauss_tail_radius(log_tol + log_mass_low - math.log(2.0))
            x_lo, x_hi = -mu - r_lo, r_hi
            lo_bound, hi_bound = log_p + special.log_ndtr(-r_lo), special.log_ndtr(-r_hi)
        truncation = math.exp(lo_bound) + math.exp(hi_bound)
        # step from the phase speed u g'(l) mu where the tilted integrand is not negligible
        x = np.linspace(x_lo, x_hi, 401)
        l = mu * mu / 2 + mu * x
        g = _subsampling_map(l, q)
        log_mag = -x * x / 2 + ((1 + v) * g - l if self.direction == "remove" else -l - v * g)
        slope = special.expit(l + math.log(q) - math.log1p(-q))
        g_prime = float(np.max(slope[log_mag >= np.max(log_mag) - 46]))
        # Proven aliasing bound (ContinuousQuadrature.aliasing_relative). In the strip |Im x| <= a
        # with theta = mu a <= pi/3: |phi(x + ib)| = phi(x) e^{b^2/2}; w = 1 - q + q e^{l} has
        # |w| <= w(l_r), so Re g <= g(l_r), and |arg w| <= |theta| (a positive real plus a vector at
        # angle theta), so |e^{-iu g}| <= e^{|u| mu a}; for "add", |w| >= Re w >= w(l_r) / 2
        # (cos theta >= 1/2) bounds e^{-v Re g} by 2^v e^{-v g(l_r)}. Hence the integrand on the
        # line Im x = b is at most C e^{b^2/2 + |u| mu a} times its value on the real line.
        strip = math.pi / (3 * mu)
        log_c = 0.0 if self.direction == "remove" else v * math.log(2.0)
        # step so that the bound at u_max and a = strip is below e^-40 (relative to the mass)
        margin = strip / 2 + (40 + math.log(2.0) + log_c) / strip
        h_strict = 2 * math.pi / (u_max * mu + margin)
        h = min(0.2, math.pi / (u_max * mu * g_prime + 14), h_strict) / 2**refine
        # never more than max_nodes: a coarser step only makes the (proven) aliasing bound larger
        h = max(h, (x_hi - x_lo) / (max_nodes - 2))
        n = int(math.ceil((x_hi - x_lo) / h))
        n += n % 2
        x = x_lo + h * np.arange(n + 1)
        nodes = mu * mu / 2 + mu * x
        log_w = math.log(h) + _norm_logpdf(x)
        return ContinuousQuadrature(nodes, log_w, nodes[::2], log_w[::2] + math.log(2.0), truncation,
                                    rigorous=True, step=h, strip=strip, phase_rate=mu, log_strip_factor=log_c)


@functools.singledispatch
def subsampled_loss(base: PrivacyLoss, rate: float, direction: str) -> PrivacyLoss:
    """Loss of the Poisson-subsampled pair of ``base`` (remove-direction pair), one direction.

    Zhu, Dong, Wang 2022, Thm 11(1); laws with an exact subsampled form register their own.
    """
    return SubsampledLoss(base, rate, direction)
