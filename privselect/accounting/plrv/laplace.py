"""Privacy loss of the Laplace mechanism: atoms at +-mu and a density between (GLW 2021, App. B.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .loss import Atoms, PrivacyLoss


def _log_sinh_over(w: np.ndarray, mu: float) -> np.ndarray:
    """log(sinh(w mu) / w) for complex w, stable for large |Re w| and at w = 0 (value log mu)."""
    w = np.asarray(w, dtype=complex)
    x = w * mu
    out = np.empty(x.shape, dtype=complex)
    big, neg = x.real > 0.5, x.real < -0.5
    mid = ~(big | neg)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[big] = x[big] + np.log1p(-np.exp(-2 * x[big])) - math.log(2.0) - np.log(w[big])
        out[neg] = -x[neg] + np.log1p(-np.exp(2 * x[neg])) - math.log(2.0) - np.log(-w[neg])
        xm = x[mid]
        ratio = np.where(xm == 0, 1.0, np.sinh(xm) / np.where(xm == 0, 1.0, xm))
        out[mid] = math.log(mu) + np.log(ratio)
    return out


@dataclass(frozen=True)
class LaplaceLoss(PrivacyLoss):
    """PLRV of (Lap(0, 1/mu), Lap(1, 1/mu)), supported on [-mu, mu] with atoms at the ends.

    Under P: mass 1/2 at +mu, e^{-mu}/2 at -mu, density e^{(l-mu)/2}/4 in between
    (Gopi, Lee, Wutschitz 2021, App. B.1; Zhu, Dong, Wang 2022, Lemma 33 (000) / 34 (002)).
    Under Q the density is multiplied by e^{-l}.
    """

    mu: float

    @property
    def support(self) -> tuple[float, float]:
        return (-self.mu, self.mu)

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        inner = 0.5 * np.exp((np.minimum(x, self.mu) - self.mu) / 2)
        return np.where(x < -self.mu, 0.0, np.where(x >= self.mu, 1.0, inner))

    def sf(self, x):
        x = np.asarray(x, dtype=float)
        inner = 1.0 - 0.5 * np.exp((np.minimum(x, self.mu) - self.mu) / 2)
        return np.where(x < -self.mu, 1.0, np.where(x >= self.mu, 0.0, inner))

    def cdf_secondary(self, x):
        x = np.asarray(x, dtype=float)
        inner = 1.0 - 0.5 * np.exp(-(np.maximum(x, -self.mu) + self.mu) / 2)
        return np.where(x < -self.mu, 0.0, np.where(x >= self.mu, 1.0, inner))

    def sf_secondary(self, x):
        x = np.asarray(x, dtype=float)
        inner = 0.5 * np.exp(-(np.maximum(x, -self.mu) + self.mu) / 2)
        return np.where(x < -self.mu, 1.0, np.where(x >= self.mu, 0.0, inner))

    def atoms(self) -> Atoms:
        e = math.exp(-self.mu)
        return Atoms(
            locations=np.array([-self.mu, self.mu]),
            primary=np.array([e / 2, 0.5]),
            secondary=np.array([0.5, e / 2]),
        )

    def log_phi(self, z):
        z = np.asarray(z, dtype=complex)
        mu = self.mu
        w = 2j * z + 1
        # (e^{iz mu} - e^{-mu(1+iz)}) / w = e^{iz mu} (1 - e^{-mu w}) / w, stable near w = 0.
        safe_w = np.where(w == 0, 1.0, w)
        ratio = np.where(w == 0, mu, -np.expm1(-mu * safe_w) / safe_w)
        a = np.exp(1j * z * mu)
        b = np.exp(-mu * (1 + 1j * z))
        return np.log(0.5 * (a + b + a * ratio))

    def log_phi_continuous(self, z):
        """log E_P[e^{izL}; -mu < L < mu] = log(e^{-mu/2} sinh(w mu) / (2 w)), w = iz + 1/2.

        The density of the continuous part is e^{(l - mu)/2} / 4 on (-mu, mu); evaluated in
        log space, so it does not overflow for large Im(-z).
        """
        w = 1j * np.asarray(z, dtype=complex) + 0.5
        return -self.mu / 2 - math.log(2.0) + _log_sinh_over(w, self.mu)

    def continuous_variation(self) -> float:
        """e^{(l - mu)/2} / 4 rises from e^{-mu}/4 to 1/4 on (-mu, mu), with jumps at both ends: 1/2."""
        return 0.5

    def log_fourier_envelope(self, v, u):
        """|E| <= e^{-mu/2} cosh(b mu) / (2 |w|) with b = v + 1/2, |w| = sqrt(b^2 + u^2), capped by
        the tilted mass e^{-mu/2} sinh(b mu) / (2 b) (|sinh(x + iy)| <= cosh x)."""
        u = np.asarray(u, dtype=float)
        b = v + 0.5
        x = b * self.mu
        log_cosh = x + math.log1p(math.exp(-2 * x)) - math.log(2.0)
        log_mass = -self.mu / 2 - math.log(2.0) + float(np.real(_log_sinh_over(np.array(b + 0j), self.mu)))
        decay = -self.mu / 2 - math.log(2.0) + log_cosh - 0.5 * np.log(b * b + u * u)
        return np.minimum(decay, log_mass)
