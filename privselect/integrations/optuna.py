"""Private Optuna studies: keep writing ``objective(trial)``, get one certificate for the search.

Three lines change from a plain Optuna study::

    study = PrivateStudy(privacy=one_run, k=ps.Geometric(mean=10), delta=1e-5, seed=0)
    result = study.optimize(objective)          # no n_trials, no timeout
    result.best_params, result.best_value, result.certificate

What the wrapper controls (Optuna leaks all of it by default; ``../design/peers.md`` §5):

* the number of trials is K, drawn from ``k`` before any trial; there is no ``n_trials`` or
  ``timeout`` (a timeout makes K data-dependent);
* storage is in memory and dropped after the search; a persistent ``storage`` is refused;
* pruning is disabled: ``trial.report`` / ``trial.should_prune`` raise
  :class:`PrivateStudyError` and the study stops without releasing anything;
* a trial that raises (any other exception) or returns a non-finite value scores the worst
  value; it is never retried; its message is swallowed;
* Optuna's per-trial INFO/WARNING logging is silenced for the duration and restored after;
* only the winner leaves: ``best_trial`` is a fresh ``FrozenTrial`` with the winner's params,
  value, distributions and user attributes (no number, timestamps or system attributes).

Samplers. The selection theorems (KRW 2024; Papernot, Steinke 2022) need candidates drawn
i.i.d. and independently of past values: only ``RandomSampler`` qualifies (the default,
seeded). ``QMCSampler`` draws dependent (low-discrepancy) points and adaptive samplers (TPE,
GP, CMA-ES, NSGA, ...) condition on past values; both are refused unless ``adaptive=True``,
which certifies the search as what it then is, K adaptively chosen runs with K independent
of the data:

    delta(eps) <= sum_k P[K = k] delta_k(eps)        (:mod:`privselect.selection.mixture`)

Proof: given K = k, the transcript of an adaptive search is an adaptive composition of k
runs, so its profile is at most delta_k (the k-fold composition; adaptive composition
theorem, e.g. Gopi, Lee, Wutschitz 2021). K has the same law on both neighbours, so the
output laws are mixtures with common weights P[K = k], and the hockey-stick divergence is
jointly convex: H(sum_k p_k A_k || sum_k p_k A'_k) <= sum_k p_k H(A_k || A'_k). Releasing
only the winner is a post-processing. This bound is never below the selection bound for the
same K and base (a test checks it), and it also covers releasing K (``n_trials``).
``GridSampler`` visits the grid without replacement, which no selection theorem covers: it is
refused; use ``trial.suggest_categorical`` with the default ``RandomSampler`` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import _validation as check
from ..accounting.profile import PrivacyProfile
from ..errors import PrivateStudyError
from ..mechanisms import Mechanism
from ..selection.certificate import Certificate, certify
from ..selection.distributions import KDistribution
from ..tuning import _mixture_certificate, score_and_output

__all__ = ["PrivateStudy", "PrivateStudyResult", "PrivateStudyError"]


def _optuna():
    try:
        import optuna
    except ImportError:  # pragma: no cover - optuna is a core dependency
        raise ImportError("privselect.integrations.optuna needs optuna") from None
    return optuna


@dataclass(frozen=True, repr=False)
class PrivateStudyResult:
    """The winner of a private study, and the certificate of the whole search."""

    best_params: dict[str, Any] | None
    best_value: float | None
    best_output: Any
    best_trial: Any
    selected: bool
    certificate: Certificate
    n_trials: int | None = None  # K, released only with reveal_k=True or adaptive=True

    def __repr__(self) -> str:
        k = "" if self.n_trials is None else f", n_trials={self.n_trials}"
        if not self.selected:
            return f"PrivateStudyResult(nothing selected (K = 0){k}, certificate={self.certificate})"
        return (f"PrivateStudyResult(best_params={self.best_params!r}, best_value={self.best_value!r}{k}, "
                f"certificate={self.certificate})")

    def to_dict(self) -> dict[str, Any]:
        out = {"best_params": self.best_params, "best_value": self.best_value, "selected": self.selected,
               "certificate": self.certificate.to_dict()}
        if self.n_trials is not None:
            out["n_trials"] = self.n_trials
        return out


class _Pruned(Exception):
    """Raised inside the objective when it tries to prune; aborts the study."""


class PrivateTrial:
    """What the objective sees: Optuna's suggest API, its own generator, no pruning, no study."""

    def __init__(self, trial: Any, rng: np.random.Generator) -> None:
        self._trial = trial
        self.rng = rng

    def suggest_float(self, *args, **kwargs):
        return self._trial.suggest_float(*args, **kwargs)

    def suggest_int(self, *args, **kwargs):
        return self._trial.suggest_int(*args, **kwargs)

    def suggest_categorical(self, *args, **kwargs):
        return self._trial.suggest_categorical(*args, **kwargs)

    def set_user_attr(self, key: str, value: Any) -> None:
        self._trial.set_user_attr(key, value)

    @property
    def params(self) -> dict[str, Any]:
        return self._trial.params

    @property
    def user_attrs(self) -> dict[str, Any]:
        return self._trial.user_attrs

    def report(self, value: float, step: int) -> None:
        raise _Pruned("trial.report")

    def should_prune(self) -> bool:
        raise _Pruned("trial.should_prune")

    @property
    def study(self):
        raise PrivateStudyError("a private trial does not expose its study (it holds every other trial)")


class PrivateStudy:
    """An Optuna study that runs exactly K trials (K ~ ``k``) and releases the best one, certified.

    ``privacy`` is the privacy of ONE trial (a Mechanism, or a PrivacyProfile for the
    non-adaptive certificate). ``sampler`` defaults to ``RandomSampler(seed)``.
    """

    def __init__(self, privacy: Mechanism | PrivacyProfile, k: KDistribution, delta: float, *,
                 direction: str = "maximize", sampler: Any = None, seed: int | None = None,
                 study_name: str | None = None, adaptive: bool = False, reveal_k: bool = False,
                 storage: Any = None, accountant: str = "prv", accountant_options: dict[str, Any] | None = None):
        optuna = _optuna()
        if storage is not None:
            raise PrivateStudyError(
                "a private study keeps its trials in memory and drops them: a persistent storage would keep every "
                "trial's parameters and value, which the certificate does not cover. Remove storage=."
            )
        if not isinstance(privacy, (Mechanism, PrivacyProfile)):
            raise TypeError("privacy must be a Mechanism or a PrivacyProfile (the privacy of one trial)")
        if not isinstance(k, KDistribution):
            raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
        if not isinstance(direction, str) or direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        self.privacy, self.k, self.direction, self.seed = privacy, k, direction, seed
        self.delta = check.delta_scalar("delta", delta)
        self.study_name, self.adaptive, self.reveal_k = study_name, bool(adaptive), bool(reveal_k)
        self.accountant, self.accountant_options = accountant, dict(accountant_options or {})
        self._sampler_factory = self._check_sampler(optuna, sampler)
        if (self.adaptive or self.reveal_k) and not isinstance(privacy, Mechanism):
            raise ValueError("adaptive=True and reveal_k=True compose the trials: privacy must be a Mechanism")
        self._certificate: Certificate | None = None

    def _check_sampler(self, optuna, sampler) -> Callable[[int], Any]:
        samplers = optuna.samplers
        if sampler is None:
            return lambda seed: samplers.RandomSampler(seed=seed)
        if isinstance(sampler, samplers.GridSampler):
            raise PrivateStudyError(
                "GridSampler visits the grid without replacement, which the selection theorems do not cover; use "
                "trial.suggest_categorical over the grid values with the default RandomSampler (with replacement)"
            )
        if type(sampler) is samplers.RandomSampler:
            return lambda seed: sampler
        if not self.adaptive:
            reason = ("draws dependent low-discrepancy points" if isinstance(sampler, samplers.QMCSampler)
                      else "chooses candidates from past trial values")
            raise PrivateStudyError(
                f"{type(sampler).__name__} {reason}; the selection certificate needs i.i.d. candidates "
                "(RandomSampler). Pass adaptive=True to certify it as an adaptive search (a larger epsilon)."
            )
        return lambda seed: sampler

    @property
    def certificate(self) -> Certificate:
        """Certificate of the whole search (computed before any trial; data-independent)."""
        if self._certificate is None:
            if self.adaptive or self.reveal_k:
                self._certificate = _mixture_certificate(self.privacy, self.k, self.delta, self.accountant,
                                                         self.accountant_options)
            else:
                options = {} if isinstance(self.privacy, PrivacyProfile) else self.accountant_options
                self._certificate = certify(self.privacy, self.k, self.delta, accountant=self.accountant, **options)
        return self._certificate

    def optimize(self, objective: Callable[[PrivateTrial], Any]) -> PrivateStudyResult:
        """Run K trials of ``objective`` (returning a value or (value, output)); release the best."""
        if not callable(objective):
            raise TypeError("objective must be callable: objective(trial) -> value or (value, output)")
        optuna = _optuna()
        certificate = self.certificate
        root = np.random.SeedSequence(self.seed)
        k_seed, sampler_seed, trials_seed = root.spawn(3)
        n_trials = self.k.sample(np.random.Generator(np.random.PCG64(k_seed)))
        revealed = n_trials if (self.adaptive or self.reveal_k) else None
        if n_trials == 0:
            return PrivateStudyResult(None, None, None, None, False, certificate, revealed)
        sampler = self._sampler_factory(int(sampler_seed.generate_state(1)[0]))
        previous = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        try:
            study = optuna.create_study(storage=None, sampler=sampler, pruner=optuna.pruners.NopPruner(),
                                        direction=self.direction, study_name=self.study_name)
            sign = 1.0 if self.direction == "maximize" else -1.0
            best = None  # (key, params, distributions, user_attrs, value, output)
            for seed in trials_seed.spawn(n_trials):
                trial = study.ask()
                private = PrivateTrial(trial, np.random.Generator(np.random.PCG64(seed)))
                try:
                    value, output = score_and_output(objective(private))
                except _Pruned as exc:
                    raise PrivateStudyError(
                        f"{exc.args[0]} was called: pruning is disabled in a private study (intermediate values are "
                        "data-dependent and pruning makes which runs complete data-dependent). The study stopped "
                        "and released nothing."
                    ) from None
                except Exception:  # noqa: BLE001 - release rules: the worst value, no retry, no message
                    value, output = math.nan, None
                if math.isfinite(value):
                    study.tell(trial, value)
                else:
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                key = sign * value if math.isfinite(value) else -math.inf
                if best is None or key > best[0]:
                    best = (key, dict(trial.params), dict(trial.distributions), dict(trial.user_attrs),
                            value if math.isfinite(value) else -sign * math.inf, output if math.isfinite(value) else None)
            del study
        finally:
            optuna.logging.set_verbosity(previous)
        _, params, distributions, user_attrs, value, output = best
        frozen = optuna.trial.create_trial(
            state=optuna.trial.TrialState.COMPLETE if math.isfinite(value) else optuna.trial.TrialState.FAIL,
            value=value if math.isfinite(value) else None, params=params, distributions=distributions,
            user_attrs=user_attrs)
        return PrivateStudyResult(params, value, output, frozen, True, certificate, revealed)
