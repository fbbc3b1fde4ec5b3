"""Privacy loss of the Gaussian mechanism (Gopi, Lee, Wutschitz 2021, Prop. B.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .loss import PrivacyLoss


@dataclass(frozen=True)
class GaussianLoss(PrivacyLoss):
    """PLRV of (N(mu, 1), N(0, 1)): L ~ N(mu^2/2, mu^2) under P, N(-mu^2/2, mu^2) under Q.

    Gopi, Lee, Wutschitz 2021, Prop. B.1; Zhu, Dong, Wang 2022, Lemma 34 (000) / 35 (002).
    """

    mu: float

    @property
    def support(self) -> tuple[float, float]:
        return (-math.inf, math.inf)

    def cdf(self, x):
        return special.ndtr((np.asarray(x, dtype=float) - self.mu**2 / 2) / self.mu)

    def sf(self, x):
        return special.ndtr(-(np.asarray(x, dtype=float) - self.mu**2 / 2) / self.mu)

    def cdf_secondary(self, x):
        return special.ndtr((np.asarray(x, dtype=float) + self.mu**2 / 2) / self.mu)

    def sf_secondary(self, x):
        return special.ndtr(-(np.asarray(x, dtype=float) + self.mu**2 / 2) / self.mu)

    def log_phi(self, z):
        z = np.asarray(z, dtype=complex)
        return (1j * z - z * z) * (self.mu**2 / 2)

    def continuous_variation(self) -> float:
        """Unimodal N(mu^2/2, mu^2): twice the peak density 1 / (mu sqrt(2 pi))."""
        return 2.0 / (self.mu * math.sqrt(2 * math.pi)) * (1 + 1e-12)

    def log_fourier_envelope(self, v, u):
        """Exact: |E_P[e^{(v-iu)L}]| = exp(mu^2 (v + v^2 - u^2) / 2)."""
        u = np.asarray(u, dtype=float)
        return self.mu**2 * (v + v * v - u * u) / 2
