"""The `PrivacyLoss` interface: the law of one privacy loss under both distributions of its pair."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Atoms:
    """Point masses of a PLRV at finite locations (primary and secondary law)."""

    locations: np.ndarray
    primary: np.ndarray
    secondary: np.ndarray


class PrivacyLoss(ABC):
    """Law of ``L = log(p/q)`` under P (primary) and Q (secondary), finite part only.

    All functions are vectorised over real ``x`` (CDFs) or complex ``z`` (log-phi).
    ``cdf(+inf) = 1 - inf_mass``: the atom at ``+inf`` is excluded from the CDFs and phi.
    """

    #: P[L = +inf], the mass an (eps, delta) black box puts outside every eps.
    inf_mass: float = 0.0

    @property
    @abstractmethod
    def support(self) -> tuple[float, float]:
        """Closed hull (lo, hi) of the finite support of L (possibly infinite ends)."""

    @abstractmethod
    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P[L <= x, L finite]."""

    @abstractmethod
    def sf(self, x: np.ndarray) -> np.ndarray:
        """P[x < L < inf], accurate in the right tail."""

    @abstractmethod
    def cdf_secondary(self, x: np.ndarray) -> np.ndarray:
        """Q[L <= x, L finite] (Q puts mass ``secondary_neg_inf_mass`` at -inf)."""

    @abstractmethod
    def sf_secondary(self, x: np.ndarray) -> np.ndarray:
        """Q[x < L < inf]."""

    @abstractmethod
    def log_phi(self, z: np.ndarray) -> np.ndarray:
        """log E_P[exp(i z L); L finite] for complex z (Zhu, Dong, Wang 2022, Def. 11).

        Valid wherever the expectation converges, in particular for ``Im z <= 0`` down to
        ``-Im z < lambda_max`` with ``E_P[e^{lambda_max L}] < inf``.
        """

    def tail_pair(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(``sf(x)``, ``sf_secondary(x)``), the same values; a loss may share work between the two."""
        return self.sf(x), self.sf_secondary(x)

    def argument_error(self, x: np.ndarray) -> np.ndarray:
        """A bound on the backward error of ``sf``/``sf_secondary``/``cdf``: each computed value is the exact one
        at some argument within this distance of ``x`` (up to its forward relative error, a few ulps). 0 for the
        base laws, whose tails are evaluated directly; the subsampled loss maps x back to its base first."""
        return np.zeros(np.shape(x))

    def optimistic_loss(self) -> PrivacyLoss | None:
        """The loss whose tangent lines pld's optimistic discretisation takes (each must lie below this loss's
        curve): itself for an exact law; a dominated law's for a dominating one (`allocation`); None where no
        lower law is known (the composed lower end is then 0)."""
        return self

    def atoms(self) -> Atoms:
        """Finite point masses (empty for continuous laws)."""
        empty = np.zeros(0)
        return Atoms(empty, empty, empty)

    def log_mgf(self, lam: np.ndarray) -> np.ndarray:
        """log E_P[e^{lam L}; L finite] for real lam (``log_phi(-i lam)``)."""
        return np.real(self.log_phi(-1j * np.asarray(lam, dtype=float)))

    @property
    def secondary_neg_inf_mass(self) -> float:
        """Q[L = -inf]: equals P[L = +inf] for the worst-case pairs used here."""
        return self.inf_mass

    def continuous_variation(self) -> float:
        """An upper bound on the total variation of the density of the continuous part of L under P.

        The continuous part is the law minus `atoms` and minus the mass at +inf; jumps
        of the density (at the ends of a bounded support) are included. The PRV accountant
        bounds its mean-preservation error with it (`privselect.accounting.prv`).
        """
        at = self.atoms()
        if at.locations.size and float(np.sum(at.primary)) >= (1.0 - self.inf_mass) * (1 - 1e-12):
            return 0.0  # purely atomic (up to the rounding of the masses): no continuous part
        raise NotImplementedError(f"no density variation bound for {type(self).__name__}")

    def log_fourier_envelope(self, v: float, u: np.ndarray) -> np.ndarray:
        """log of a bound on |E_P[e^{(v - iu) L}; L in the continuous part]| for real v >= 0.

        The continuous part is the law minus `atoms` and minus the mass at +inf. The
        bound is non-increasing in |u| and ``-inf`` for purely atomic laws. It controls the
        truncation error of Fourier inversion along the line Im = v (accounting-cf.md §7).
        """
        raise NotImplementedError(f"no Fourier envelope for {type(self).__name__}")
