"""What a private study's objective sees: `PrivateTrial` (Optuna's suggest API, the trial's own generator, no
pruning, no study) and the privselect law of each Optuna suggestion (`search_law`), the law Optuna's RandomSampler
draws from. The study itself is [`privselect.integrations.optuna`][privselect.integrations.optuna]."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ..errors import PrivateStudyError, TrainerContractError
from ..tuning.privacy import CandidateCheck, CandidatePrivacyError
from ..tuning.run import silenced
from ..tuning.space import (
    Choice,
    Distribution,
    IntLogUniform,
    IntUniform,
    LogUniform,
    Uniform,
)

__all__ = ["PrivateTrial", "check_declared_laws", "search_law"]

_PRUNING = ("pruning is disabled in a private study (intermediate values are data-dependent and pruning makes "
            "which runs complete data-dependent). The study stopped and released nothing.")

def _optuna():
    try:
        import optuna
    except ImportError:  # pragma: no cover - optuna is a core dependency
        raise ImportError("privselect.integrations.optuna needs optuna") from None
    return optuna


class _Refused(BaseException):
    """Raised into the objective when it breaks the study's rules; the refusal itself is recorded on the
    trial, so an objective that catches this changes nothing (a BaseException: ``except Exception`` passes it)."""


def _distribution(kind: str, low: Any, high: Any, step: Any, log: bool) -> Distribution:
    """The privselect law of an Optuna suggestion (the law Optuna's RandomSampler draws from)."""
    if kind == "float":
        if log:
            if step is not None:
                raise ValueError("suggest_float: step and log cannot be used together")
            return LogUniform(low, high)
        if step is not None:
            return _SteppedFloat(float(low), float(high), float(step))
        return Uniform(low, high)
    if log:
        if step != 1:
            raise ValueError("suggest_int: step and log cannot be used together")
        return IntLogUniform(low, high)
    return IntUniform(low, high - (high - low) % step, step)


@dataclass(frozen=True)
class _SteppedFloat(Distribution):
    low: float
    high: float
    step: float

    def sample(self, rng: np.random.Generator) -> float:
        n = int(math.floor((self.high - self.low) / self.step + 1e-12))
        return float(self.low + self.step * rng.integers(0, n, endpoint=True))

    def support(self) -> tuple[tuple[Any, float], ...]:
        n = math.floor((self.high - self.low) / self.step + 1e-12)
        return tuple((float(self.low + self.step * i), 1.0 / (n + 1)) for i in range(n + 1))


def search_law(name: str, law: Any) -> Distribution:
    """A declared law of the adaptive search: a privselect law, or an Optuna distribution (its suggest_* law)."""
    if isinstance(law, Distribution):
        return law
    optuna = _optuna()
    dists = optuna.distributions
    if isinstance(law, dists.FloatDistribution):
        return _distribution("float", law.low, law.high, law.step, law.log) if law.low < law.high else Choice([law.low])
    if isinstance(law, dists.IntDistribution):
        return _distribution("int", law.low, law.high, law.step, law.log)
    if isinstance(law, dists.CategoricalDistribution):
        return Choice(law.choices)
    raise TypeError(f"search_space[{name!r}] must be a privselect.space law or an optuna distribution, got "
                    f"{type(law).__name__}")


class PrivateTrial:
    """What the objective sees: Optuna's suggest API, its own generator, no pruning, no study.

    ``trial.rng`` is the trial's training generator (use it; never store it in the output).
    ``trial.number`` is the trial's index among the K runs; it is not released, and putting it
    in the output would reveal a lower bound on K.
    """

    def __init__(self, number: int, rng: np.random.Generator, params_rng: np.random.Generator | None,
                 optuna_trial: Any = None, privacy_space: Mapping[str, Distribution] | None = None,
                 candidate_check: CandidateCheck | None = None,
                 preset: tuple[Mapping[str, Distribution], Mapping[str, Any]] | None = None) -> None:
        self.number, self.rng = number, rng
        self._preset_laws, self._preset = preset if preset is not None else ({}, {})
        self._params_rng, self._trial = params_rng, optuna_trial
        self._privacy_space = dict(privacy_space or {})
        self._check = candidate_check
        self._params: dict[str, Any] = {}
        self._distributions: dict[str, Any] = {}
        self._user_attrs: dict[str, Any] = {}
        self.refusal: BaseException | None = None  # the first rule the objective broke (the trial scores worst)
        self._privacy_checked = False
        # the declared hyperparameters are drawn first, in privacy_space order: the engine checks their privacy for
        # all K trials before the first one runs (from the seed alone), and the suggestions then return them
        self._predrawn = ({} if params_rng is None or optuna_trial is not None else
                          {name: law.sample(params_rng) for name, law in self._privacy_space.items()})

    def _refuse(self, error: BaseException) -> NoReturn:
        if self.refusal is None:
            self.refusal = error
        raise _Refused()

    # -- suggestions ---------------------------------------------------------------------

    def _suggest(self, name: str, law: Distribution, optuna_distribution: Any, adaptive_call: Callable[[], Any]):
        if self.refusal is not None:
            raise _Refused()
        if name in self._params:
            return self._params[name]
        for space_name, space in (("privacy_space", self._privacy_space), ("search_space", self._preset_laws)):
            declared = space.get(name)
            if declared is not None and declared.suggest_law != law:
                self._refuse(TrainerContractError(f"trial suggests {name!r} from {law!r}, but {space_name} declares "
                                                  f"{declared!r}: they must be the same law"))
        if name in self._preset:  # drawn by the adaptive search from its bounded-ratio law
            value = self._preset[name]
        elif name in self._predrawn:
            value = self._predrawn[name]
        else:
            rng = self._params_rng  # exactly one of an Optuna trial and the trial's own generator is given
            value = adaptive_call() if self._trial is not None or rng is None else law.sample(rng)
        self._params[name], self._distributions[name] = value, optuna_distribution
        if self._check is not None and not self._privacy_checked:  # before the objective sees the value
            problem = self._check.problem(self._params, complete=False)
            if problem is not None:
                self._refuse(CandidatePrivacyError(problem))
            # once the privacy is determined, later suggestions cannot change it (each read name is fixed)
            self._privacy_checked = self._check.actual(self._params, complete=False) is not None
        return value

    def suggest_float(self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False):
        optuna = _optuna()
        law = _distribution("float", low, high, step, log) if low < high else Choice([float(low)])
        dist = optuna.distributions.FloatDistribution(low, high, log=log, step=step)
        return self._suggest(name, law, dist, lambda: self._trial.suggest_float(name, low, high, step=step, log=log))

    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False):
        optuna = _optuna()
        law = _distribution("int", low, high, step, log)
        dist = optuna.distributions.IntDistribution(low, high, log=log, step=step)
        return self._suggest(name, law, dist, lambda: self._trial.suggest_int(name, low, high, step=step, log=log))

    def suggest_categorical(self, name: str, choices: Any):
        optuna = _optuna()
        law = Choice(choices)
        dist = optuna.distributions.CategoricalDistribution(tuple(choices))
        return self._suggest(name, law, dist, lambda: self._trial.suggest_categorical(name, choices))

    # -- attributes ----------------------------------------------------------------------

    def set_user_attr(self, key: str, value: Any) -> None:
        self._user_attrs[key] = value

    @property
    def params(self) -> dict[str, Any]:
        return dict(self._params)

    @property
    def distributions(self) -> dict[str, Any]:
        return dict(self._distributions)

    @property
    def user_attrs(self) -> dict[str, Any]:
        return dict(self._user_attrs)

    def report(self, value: float, step: int) -> None:
        self._refuse(PrivateStudyError(f"trial.report was called: {_PRUNING}"))

    def should_prune(self) -> bool:
        self._refuse(PrivateStudyError(f"trial.should_prune was called: {_PRUNING}"))

    @property
    def study(self):
        self._refuse(PrivateStudyError("a private trial does not expose its study (it holds every other trial)"))


class _ProbeDone(BaseException):
    """Every declared hyperparameter was suggested: the law probe stops the objective here."""


class _LawProbe(PrivateTrial):
    """A trial that answers the objective's suggestions from the declared laws (fresh public generator) and stops
    it once every declared hyperparameter was suggested, before it trains: it checks the laws the code names."""

    def __init__(self, space: Mapping[str, Distribution], privacy_space: Mapping[str, Distribution] | None) -> None:
        rng = np.random.default_rng()
        super().__init__(-1, rng, rng, privacy_space=privacy_space,
                         preset=(space, {name: law.sample(rng) for name, law in space.items()}))
        self._declared = set(space) | set(privacy_space or {})

    def _suggest(self, name, law, optuna_distribution, adaptive_call):
        value = super()._suggest(name, law, optuna_distribution, adaptive_call)
        if self._declared <= set(self.params):
            raise _ProbeDone()
        return value


def check_declared_laws(objective: Callable[[PrivateTrial], Any], space: Mapping[str, Distribution],
                        privacy_space: Mapping[str, Distribution] | None) -> None:
    """Before any trial: run the objective on a law probe up to its last declared suggestion and raise the first
    law mismatch (a TrainerContractError naming the hyperparameter and both laws, constants of the code). The
    probe stops before training, its output is dropped and it is silenced; the laws an objective suggests must be
    fixed by its code (an objective that chose a law from the data would make this verdict depend on it)."""
    probe = _LawProbe(space, privacy_space)
    with silenced():
        try:
            objective(probe)
        except (_ProbeDone, _Refused):
            pass
        except Exception:  # noqa: BLE001 - the objective's own failure: the trials will score it, not this check
            pass
    if isinstance(probe.refusal, TrainerContractError):
        raise TrainerContractError(f"{probe.refusal} (checked before any trial, on the code's suggest_* calls; "
                                   "nothing ran on the data's results)") from None
