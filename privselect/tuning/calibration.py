"""The front ends' noise calibration, on the one calibration path: ``ps.calibrate_noise`` of the certificate they issue.

[`NoiseCalibration`][privselect.tuning.calibration.NoiseCalibration] gives
[`PrivateTuner`][privselect.tuning.PrivateTuner] and [`PrivateStudy`][privselect.integrations.optuna.PrivateStudy]
``calibrate``: the smallest DP-SGD noise multiplier whose certificate, the one the object will issue, meets an
epsilon or a [`RiskTarget`][privselect.attack_risk.RiskTarget]. What the object already knows (K's law, delta, its
score noise, its search, its final run, K released or not, its accountant) is taken from it
([`Issued`][privselect.tuning.calibration.Issued]); an argument that says otherwise is refused, naming it. The
calibrated run, ``ps.dpsgd(noise_multiplier=sigma, ...)``, becomes the object's privacy, so its certificate is the
one calibrated. Nothing is computed here: ``ps.calibrate_noise`` searches and checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import _validation as check
from ..accounting.base import Accountant
from ..mechanisms import Mechanism, dpsgd
from ..selection.adaptive import DensityRatio
from ..selection.calibrate import calibrate_noise
from ..selection.distributions import KDistribution

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..attack_risk import RiskTarget

__all__ = ["CALLABLE_PRIVACY", "Issued", "NoiseCalibration"]

#: Why a front end whose privacy is a callable has no one noise multiplier to calibrate.
CALLABLE_PRIVACY = ("privacy: calibrate sets the noise multiplier of one fixed DP-SGD run, but privacy is a callable "
                    "params -> Mechanism (the hyperparameters choose the privacy); pass one Mechanism")


@dataclass(frozen=True)
class Issued:
    """The certificate a front end issues, as its calibration needs it (read from the object, never re-declared).

    ``search``: the density ratio of its adaptive search (None: i.i.d.); ``final``: its final run's privacy (None:
    no final run); ``bound``: ``"mixture"`` where K and every run are released; ``refusal``: why this object's
    certificate has no noise multiplier to calibrate (naming the parameter), or None.
    """

    owner: str
    k: KDistribution
    delta: float
    score_noise: Mechanism | None
    search: DensityRatio | None
    final: Mechanism | None
    bound: str | None
    accountant: str | Accountant
    refusal: str | None = None

    def arguments(self, delta: float | None, score_noise: Any, search: Any, final: Any) -> dict[str, Any]:
        """The arguments of ``ps.calibrate_noise`` for this certificate; one that conflicts with it is refused."""
        if self.refusal is not None:
            raise ValueError(self.refusal)
        if delta is not None and check.delta_scalar("delta", delta) != self.delta:
            raise ValueError(f"delta={delta!r}: this {self.owner} certifies at its own delta={self.delta!r}; leave "
                             "delta out (or pass that one)")
        if score_noise is not None and score_noise != self.score_noise:
            own = "no score noise" if self.score_noise is None else f"score_noise={self.score_noise!r}"
            raise ValueError(f"score_noise={score_noise!r}: this {self.owner} certifies its runs with {own}; leave "
                             f"score_noise out (it is taken from the {self.owner}) or build the {self.owner} with the "
                             "score noise you mean")
        return {"score_noise": self.score_noise, "search": self._search(search), "final": self._final(final),
                "bound": self.bound, "accountant": self.accountant}

    def _search(self, search: Any) -> DensityRatio | None:
        if search is None:
            return self.search
        given = DensityRatio.of(getattr(search, "ratio", search))
        if given != self.search:
            what = ("releases K and every trial (adaptive=True: the K-mixture bound)" if self.bound == "mixture" else
                    "draws its candidates i.i.d." if self.search is None else
                    f"certifies its own adaptive search, density_ratio=({self.search.upper:g}, {self.search.lower:g})")
            raise ValueError(f"search={search!r}: this {self.owner} {what}; leave search out (it is taken from the "
                             f"{self.owner}) or build the {self.owner} with search=ps.AdaptiveSearch(...)")
        return self.search

    def _final(self, final: Any) -> Mechanism | str | None:
        if final is None:
            return self.final
        if self.final is None:
            raise ValueError(f"final={final!r}: this {self.owner} has no final run to certify; build it with "
                             "final=ps.FinalRun(train, privacy) (then final='same' calibrates that run too)")
        if final == "same" or final == self.final:
            return final
        raise ValueError(f"final={final!r}: this {self.owner}'s final run has privacy {self.final!r}; leave final "
                         "out (it is taken from the FinalRun), or pass final='same' to train it with the calibrated "
                         "run")


class NoiseCalibration:
    """``calibrate``: a front end's DP-SGD noise multiplier, on the path of ``ps.calibrate_noise``."""

    #: The noise multiplier set by the last ``calibrate`` (None before): what the trainer trains with.
    noise_multiplier: float | None = None

    def _issued(self) -> Issued:  # pragma: no cover - each front end says what it certifies
        raise NotImplementedError

    def _adopt(self, run: Mechanism, final: Mechanism | None) -> None:  # pragma: no cover - idem
        raise NotImplementedError

    def calibrate(self, target_epsilon: float | RiskTarget, delta: float | None = None, *,
                  sample_rate: float | None = None, batch_size: int | None = None, dataset_size: int | None = None,
                  steps: int | None = None, epochs: float | None = None, sampling: str = "poisson",
                  score_noise: Mechanism | None = None, search: Any = None, final: Mechanism | str | None = None,
                  progress: bool = False) -> float:
        """The smallest noise multiplier whose certificate, the one this object issues, meets the target.

        ``ps.calibrate_noise(target_epsilon, delta, k=..., score_noise=..., search=..., final=..., ...)`` with K's
        law, delta, the score noise, the search, the final run and the accountant taken from this object; the
        DP-SGD schedule (``sample_rate`` or ``batch_size`` with ``dataset_size``, ``steps`` or ``epochs``,
        ``sampling``) is that of ``ps.dpsgd``. ``final='same'`` trains the final run with the calibrated run. The
        run ``ps.dpsgd(noise_multiplier=sigma, ...)`` becomes this object's privacy (and the final run's, with
        'same'); ``noise_multiplier`` holds sigma for the trainer. Returns sigma.
        """
        issued = self._issued()
        arguments = issued.arguments(delta, score_noise, search, final)
        schedule: dict[str, Any] = {"sample_rate": sample_rate, "batch_size": batch_size,
                                    "dataset_size": dataset_size, "steps": steps, "epochs": epochs,
                                    "sampling": sampling}
        sigma = calibrate_noise(target_epsilon, issued.delta, k=issued.k, progress=progress, **schedule, **arguments)
        run = dpsgd(noise_multiplier=sigma, **schedule)
        self._adopt(run, run if arguments["final"] == "same" else None)
        self.noise_multiplier = sigma
        return sigma
