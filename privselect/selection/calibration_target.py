"""What a calibration calibrates: the certificate of the whole procedure at a noise multiplier, and the target.

[`Procedure`][privselect.selection.calibration_target.Procedure] takes the same arguments as the certificate it
calibrates: K's law (``k``; None for one run), ``score_noise`` (a mechanism composed with each run), an adaptive
search (``search``: its density ratio; ``ps.certify_adaptive``), a final training run (``final``;
``ps.certify_pipeline``), the bound family and the accountant. ``certificate(run)`` is that certificate for one
run's mechanism; ``measure(target)`` the certified quantity a target bounds: the certificate's epsilon, or, for a
[`RiskTarget`][privselect.attack_risk.RiskTarget], the risk bound itself (``ps.risk`` of the certificate: every
profile it knows, KRW's selection profile and the K-mixture included), never a looser conversion.

[`Progress`][privselect.selection.calibration_target.Progress] counts certified evaluations on the operator's
terminal once a calibration has taken 2 s (tqdm, imported then).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..accounting import privacy_profile
from ..accounting.base import Accountant
from ..mechanisms import Mechanism, PureDP, compose
from .adaptive import DensityRatio, certify_adaptive
from .certify import Certificate, certify
from .distributions import KDistribution

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..attack_risk import RiskTarget

__all__ = ["Procedure", "Progress", "PROGRESS_AFTER", "NO_TRAINING"]

#: Seconds after which ``progress=True`` shows a bar.
PROGRESS_AFTER = 2.0
#: A run with the training removed (noise multiplier = inf): the 0-DP mechanism, which leaks nothing.
NO_TRAINING = PureDP(0.0)
#: Errors that mean "this accountant cannot answer here" (the value is then +inf: not certified).
_NO_ANSWER = (ValueError, ArithmeticError, MemoryError)


def _ratio(search: Any) -> DensityRatio | None:
    """The density ratio of ``search``: an AdaptiveSearch (its ``ratio``), a DensityRatio or a pair (C, c)."""
    if search is None:
        return None
    return DensityRatio.of(getattr(search, "ratio", search))


@dataclass(frozen=True)
class Procedure:
    """The procedure whose certificate is calibrated (the arguments of that certificate)."""

    k: KDistribution | None = None
    delta: float | None = None
    score_noise: Mechanism | None = None
    search: Any = None
    final: Mechanism | str | None = None
    bound: str | None = None
    accountant: str | Accountant = "auto"

    def __post_init__(self) -> None:
        if self.k is not None and not isinstance(self.k, KDistribution):
            raise TypeError(f"k must be None (one run) or a distribution of K (e.g. ps.Geometric(mean=10)), "
                            f"got {type(self.k).__name__}")
        if self.score_noise is not None and not isinstance(self.score_noise, Mechanism):
            raise TypeError(f"score_noise must be a mechanism composed with each run (e.g. ps.Laplace(b)), got "
                            f"{type(self.score_noise).__name__}")
        object.__setattr__(self, "search", _ratio(self.search))
        if self.final is not None and not (isinstance(self.final, Mechanism) or self.final == "same"):
            raise TypeError(f"final must be the final run's Mechanism, or 'same' (the calibrated run's schedule, "
                            f"trained once more on the full data), got {self.final!r}")
        if (self.search is not None or self.final is not None) and self.k is None:
            raise ValueError("search= and final= describe a tuning: pass k (the law of K)")
        if self.search is not None and self.final is not None:
            raise ValueError("search= with final=: no certificate of an adaptive search followed by a final run exists "
                             "here (ps.certify_adaptive has no final run)")
        if self.bound is not None and (self.search is not None or self.final is not None):
            raise ValueError("bound= chooses among the i.i.d. selection's families; the adaptive search and the "
                             "pipeline certificates choose their own (the smallest valid one)")

    def run(self, mechanism: Mechanism) -> Mechanism:
        """One run as certified: ``mechanism`` composed with the score noise."""
        return mechanism if self.score_noise is None else compose(mechanism, self.score_noise)

    def certificate(self, mechanism: Mechanism, delta: float) -> Certificate:
        """The certificate of the whole procedure whose runs train ``mechanism`` (k given)."""
        return self._certify(self.run(mechanism), self._final(mechanism), delta)

    def _certify(self, run: Mechanism, final: Mechanism, delta: float) -> Certificate:
        """The certificate of the procedure whose runs are ``run`` (training and score noise) and whose final run
        (where ``final=`` is given) is ``final``."""
        assert self.k is not None  # one run has a profile, not a selection certificate
        if self.search is not None:
            return certify_adaptive(run, self.k, delta, density_ratio=self.search)
        if self.final is not None:
            from .pipeline import certify_pipeline

            return certify_pipeline(run, self.k, delta, final=final, accountant=self.accountant)
        return certify(run, self.k, delta, bound=self.bound, accountant=self.accountant)

    def epsilon(self, mechanism: Mechanism) -> float:
        """The certified epsilon at ``self.delta`` (+inf where nothing certifies it)."""
        return self._epsilon(self.run(mechanism), self._final(mechanism))

    def _final(self, mechanism: Mechanism) -> Mechanism:
        return self.final if isinstance(self.final, Mechanism) else mechanism  # "same": the calibrated run

    def _epsilon(self, run: Mechanism, final: Mechanism) -> float:
        assert self.delta is not None
        try:
            if self.k is None:
                return float(privacy_profile(run, accountant=self.accountant).epsilon(self.delta))
            return float(self._certify(run, final, self.delta).epsilon)
        except _NO_ANSWER:
            return math.inf

    def risk_value(self, target: RiskTarget, mechanism: Mechanism) -> float:
        """``target.value(ps.risk(...))``: of one run's profile, or of the procedure's certificate (+inf where
        nothing certifies it). The certificate's delta only adds its (epsilon, delta) pair to the profiles."""
        return self._risk_value(target, self.run(mechanism), self._final(mechanism))

    def _risk_value(self, target: RiskTarget, run: Mechanism, final: Mechanism) -> float:
        from ..attack_risk import risk

        try:
            if self.k is None:
                return target.value(risk(privacy_profile(run, accountant=self.accountant)))
            return target.value(risk(self._certify(run, final, self.delta if self.delta is not None else 1e-6)))
        except _NO_ANSWER:
            return math.inf

    def measure(self, target: float | RiskTarget) -> Callable[[Mechanism], float]:
        """The certified quantity that ``target`` bounds, as a function of the run's mechanism."""
        from ..attack_risk import RiskTarget

        if isinstance(target, RiskTarget):
            return lambda mechanism: self.risk_value(target, mechanism)
        return self.epsilon

    def floor(self, target: float | RiskTarget) -> float | None:
        """The certified quantity ``target`` bounds with no training at all (noise multiplier = inf): what the score
        noise and the adaptive search cost on their own; None where the procedure has neither (no floor above 0).

        The runs are ``score_noise`` alone (``NO_TRAINING``, the 0-DP mechanism, where there is none), the final run
        of ``final="same"`` is ``NO_TRAINING``: the training is removed from the composition, nothing else changes.

        Why it is a lower bound on the certificate at every noise multiplier sigma: a run at sigma is the adaptive
        composition of the training with the score noise, and the score noise alone is a post-processing of that
        composition (forget the trained model), so by the data-processing inequality its hockey-stick curve (its
        privacy profile, its RDP curve, its pure epsilon) is pointwise at most the run's. Every certificate the
        procedure uses is a non-decreasing function of the run's privacy: KRW's selection bounds and the
        K-mixture are integrals of the run's profile against K's law with non-negative weights, DP-HyPO's Thm 1
        is the run's RDP curve plus constants, Thm 2 is (2 + theta)(epsilon + log(C/c)) with the run's pure
        epsilon, the pipeline composes the selection with the final run, and ``certify``/``certify_adaptive``
        take the smallest of such bounds (a minimum of non-decreasing functions is non-decreasing); ``ps.risk``
        of a smaller profile is smaller too (its trade-off curve lies above). So removing the composed training
        can only lower the certificate: no sigma, however large, certifies a target below the floor, and a
        calibration asked for one is refused before the search (``UnreachableTargetError``). The same
        accountant computes both, and a composition it certifies is discretised as the exact composition of
        its parts' discretisations, to which the same inequality applies.
        """
        from ..attack_risk import RiskTarget

        if self.score_noise is None and self.search is None:
            return None
        run = NO_TRAINING if self.score_noise is None else self.score_noise
        final = self.final if isinstance(self.final, Mechanism) else NO_TRAINING
        if isinstance(target, RiskTarget):
            return self._risk_value(target, run, final)
        return self._epsilon(run, final)

    def costs(self) -> str:
        """What the floor is made of, in the caller's vocabulary: "score_noise costs", "search costs", or both."""
        parts = [name for name, given in (("score_noise", self.score_noise), ("search", self.search))
                 if given is not None]
        return " and ".join(parts) + (" cost" if len(parts) > 1 else " costs")


class Progress:
    """A count of certified evaluations, shown on stderr (tqdm) once ``PROGRESS_AFTER`` seconds have passed."""

    def __init__(self, enabled: bool, description: str) -> None:
        self.enabled, self.description = bool(enabled), description
        self.start, self.count, self.bar = time.monotonic(), 0, None

    def wrap(self, function: Callable[[Any], float]) -> Callable[[Any], float]:
        if not self.enabled:
            return function

        def counted(x: Any) -> float:
            value = function(x)
            self.step()
            return value
        return counted

    def step(self) -> None:
        self.count += 1
        if self.bar is None and time.monotonic() - self.start > PROGRESS_AFTER:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is the `progress` extra
                raise ImportError("progress=True needs tqdm: pip install 'privselect[progress]'") from None
            self.bar = tqdm(desc=self.description, unit="certificate", file=sys.stderr, initial=self.count)
        elif self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
