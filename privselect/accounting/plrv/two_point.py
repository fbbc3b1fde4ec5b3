"""Two-point privacy losses: randomized response, pure eps-DP and (eps, delta) black boxes (GLW 2021, App. B.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from .loss import Atoms, PrivacyLoss


@dataclass(frozen=True)
class TwoPointLoss(PrivacyLoss):
    """PLRV of an (eps, delta) black box: +inf w.p. delta, +-eps with the RR weights.

    Finite part: (1 - delta) times binary randomized response with p = e^eps / (1 + e^eps)
    (Gopi, Lee, Wutschitz 2021, App. B.1; Zhu, Dong, Wang 2022, Lemma 32 (000) / 33 (002)).
    ``delta = 0`` gives pure eps-DP and randomized response.
    """

    eps: float
    delta: float = 0.0

    @property
    def inf_mass(self) -> float:  # type: ignore[override]
        return self.delta

    @property
    def support(self) -> tuple[float, float]:
        return (-self.eps, self.eps)

    def _weights(self) -> tuple[float, float]:
        """(P-mass at +eps, P-mass at -eps) of the finite part."""
        scale = 1.0 - self.delta
        p_hi = scale * special.expit(self.eps)
        p_lo = scale * special.expit(-self.eps)
        return p_hi, p_lo

    def atoms(self) -> Atoms:
        p_hi, p_lo = self._weights()
        if self.eps == 0:
            return Atoms(np.array([0.0]), np.array([p_hi + p_lo]), np.array([p_hi + p_lo]))
        return Atoms(np.array([-self.eps, self.eps]), np.array([p_lo, p_hi]), np.array([p_hi, p_lo]))

    def _cdf_from(self, x, masses):
        x = np.asarray(x, dtype=float)
        at = self.atoms()
        return (masses[None, :] * (at.locations[None, :] <= x.reshape(-1, 1))).sum(axis=1).reshape(x.shape)

    def _sf_from(self, x, masses):
        x = np.asarray(x, dtype=float)
        at = self.atoms()
        return (masses[None, :] * (at.locations[None, :] > x.reshape(-1, 1))).sum(axis=1).reshape(x.shape)

    def cdf(self, x):
        return self._cdf_from(x, self.atoms().primary)

    def sf(self, x):
        return self._sf_from(x, self.atoms().primary)

    def cdf_secondary(self, x):
        return self._cdf_from(x, self.atoms().secondary)

    def sf_secondary(self, x):
        return self._sf_from(x, self.atoms().secondary)

    def log_phi(self, z):
        z = np.asarray(z, dtype=complex)
        at = self.atoms()
        terms = np.log(at.primary)[None, :] + 1j * z.reshape(-1, 1) * at.locations[None, :]
        return special.logsumexp(terms, axis=1).reshape(z.shape)

    def continuous_variation(self) -> float:
        """Purely atomic: no continuous part."""
        return 0.0

    def log_fourier_envelope(self, v, u):
        """Purely atomic: no continuous part."""
        return np.full(np.shape(u), -np.inf)
