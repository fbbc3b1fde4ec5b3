"""The privacy of one run, as both front ends declare it, and the question they put to ``certify``.

The front ends never compute privacy: they turn what the user declared into the argument of
[`certify`][privselect.selection.certify.certify] (a Mechanism, a PrivacyProfile, or, when the
hyperparameters change the privacy, the law of the run's mechanism over the search space) and
ask it. ``score_noise`` is composed into the run's mechanism first.

With callable privacy, what is certified is what runs: before a candidate trains, its actual
params go through ``privacy`` and the mechanism must be the one the certificate assumed for
them ([`CandidateCheck`][privselect.tuning.privacy.CandidateCheck]); otherwise the selection stops with
[`CandidatePrivacyError`][privselect.errors.CandidatePrivacyError]. The params come from the seed and the search space (or a
study's sampler) alone, so whether this check stops the selection does not depend on the data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..accounting.average import HyperparameterMixture
from ..accounting.base import Accountant
from ..accounting.profile import PrivacyProfile
from ..errors import CandidatePrivacyError
from ..mechanisms import Gaussian, Laplace, Mechanism, compose
from ..selection.certify import Certificate, certify
from ..selection.distributions import KDistribution
from .space import ContinuousDependence, Probe, SearchSpace, privacy_law, probe_privacy

__all__ = ["RunPrivacy", "CandidatePrivacyError", "CandidateCheck"]


@dataclass(frozen=True)
class RunPrivacy:
    """``privacy``: Mechanism | PrivacyProfile | callable ``params -> Mechanism``; ``space``: its law."""

    privacy: Any
    score_noise: Gaussian | Laplace | None = None
    space: SearchSpace | None = None
    base_epsilon: float | None = None
    law: HyperparameterMixture | None = field(default=None, init=False)
    continuous_reason: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.privacy, (Mechanism, PrivacyProfile)) or callable(self.privacy)):
            raise TypeError("privacy must be a Mechanism, a PrivacyProfile, or a callable params -> Mechanism "
                            f"(the privacy of ONE run), got {type(self.privacy).__name__}")
        if self.score_noise is not None and isinstance(self.privacy, PrivacyProfile):
            raise ValueError("score_noise needs privacy as a Mechanism (a built profile cannot be composed)")
        if self.base_epsilon is not None and not self.depends_on_params:
            raise ValueError("base_epsilon (eps_Q of KRW Cor. 6.2) applies only when privacy is a callable "
                             "params -> Mechanism")
        if not self.depends_on_params:
            return
        # Hyperparameter-dependent privacy: find the law of the run's mechanism now, not at run().
        try:
            law = privacy_law(self.space, self.privacy, self.with_score_noise)
        except ContinuousDependence as exc:
            name = exc.args[0] if exc.args else "?"
            reason = (f"privacy(params) reads the hyperparameter {name!r}, whose law is continuous: the mixture "
                      "certificate needs a finite law for every hyperparameter that changes the privacy "
                      "(use Choice over a grid of values)")
            if self.base_epsilon is None:
                raise ValueError(reason + ", or pass base_epsilon to certify with KRW Cor. 6.2, which checks every "
                                 "drawn candidate against its thresholds") from None
            object.__setattr__(self, "continuous_reason", reason)
        else:
            object.__setattr__(self, "law", law)

    @property
    def depends_on_params(self) -> bool:
        return not isinstance(self.privacy, (Mechanism, PrivacyProfile))

    def with_score_noise(self, mechanism: Mechanism) -> Mechanism:
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"privacy(params) must return a Mechanism, got {type(mechanism).__name__}")
        return mechanism if self.score_noise is None else compose(mechanism, self.score_noise)

    @property
    def base(self) -> Mechanism | PrivacyProfile | HyperparameterMixture | None:
        """What ``certify`` is asked about (None: only Cor. 6.2 with per-candidate checks applies)."""
        if self.depends_on_params:
            return self.law
        if isinstance(self.privacy, PrivacyProfile):
            return self.privacy
        return self.with_score_noise(self.privacy)

    def certificate(self, k: KDistribution, delta: float, *, reveal_k: bool = False, accountant: str | Accountant = "auto",
                    accountant_options: Mapping[str, Any] | None = None) -> Certificate:
        """The certificate of the whole selection; depends on the declarations only, never on data."""
        options = dict(accountant_options or {})
        base = self.base
        if reveal_k:
            if not isinstance(base, Mechanism):
                raise ValueError("reveal_k=True composes the base run: privacy must be a Mechanism")
            return k_released_certificate(base, k, delta, accountant, options)
        if base is None:  # continuous privacy hyperparameters: Cor. 6.2 at base_epsilon, candidates checked at run
            from ..selection.bounds import cor62_thresholds, unsupported_reason
            from ..selection.certify import cor62_certificate

            reason = unsupported_reason(k, "cor62")
            if reason is not None:
                raise ValueError(f"KRW Cor. 6.2 needs a truncated negative binomial K (Geometric, Logarithmic, "
                                 f"TruncatedNegativeBinomial): {reason}")
            notes = () if self.continuous_reason is None else (self.continuous_reason,)
            return cor62_certificate(cor62_thresholds(self.base_epsilon, delta, k), k, "candidates checked at run",
                                     accountant, notes)
        if isinstance(base, PrivacyProfile):
            return certify(base, k, delta)
        if isinstance(base, HyperparameterMixture):
            return certify(base, k, delta, accountant=accountant, base_epsilon=self.base_epsilon, **options)
        return certify(base, k, delta, accountant=accountant, **options)

    def candidate_check(self, k: KDistribution, delta: float, accountant: str | Accountant,
                        accountant_options: Mapping[str, Any] | None) -> CandidateCheck | None:
        """With callable privacy: the check each candidate's actual params must pass (else None)."""
        if not self.depends_on_params:
            return None
        if self.law is not None and isinstance(self.space, Mapping):  # a law exists only for a dict space
            supports = {name: dist.support() for name, dist in self.space.items()}
            return _LawCheck(self.privacy, self.score_noise, tuple(self.space),
                             frozenset(name for name, s in supports.items() if s is None), self.law.mechanisms)
        from ..selection.calibrate import cor62_thresholds

        return _Cor62Check(self.privacy, self.score_noise, cor62_thresholds(self.base_epsilon, delta, k), accountant,
                           dict(accountant_options or {}))


class _Incomplete(LookupError):
    """A partial candidate lacks a hyperparameter that ``privacy`` reads: check it later."""


class _Partial(Mapping):
    """The params suggested so far (a study's trial): a read of one not suggested yet defers the check."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self._params = dict(params)
        self.incomplete = False

    def _defer(self) -> NoReturn:
        self.incomplete = True
        raise _Incomplete()

    def __getitem__(self, name: str) -> Any:
        if name not in self._params:
            self._defer()
        return self._params[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name]

    def __contains__(self, name: object) -> bool:
        return name in self._params or self._defer()

    def __iter__(self) -> Iterator[str]:
        self._defer()

    def __len__(self) -> int:
        self._defer()


@dataclass(frozen=True)
class CandidateCheck:
    """What a candidate's actual params must satisfy before it trains (picklable; data-independent).

    ``problem(params, complete)`` returns None or the reason to stop (a message without run
    data). ``complete=False`` checks the params a study's trial has suggested so far: where
    ``privacy`` reads one not suggested yet, the check waits for the next suggestion.
    """

    privacy: Callable[[Any], Mechanism]
    score_noise: Gaussian | Laplace | None

    def actual(self, params: Mapping[str, Any], complete: bool) -> Mechanism | None:
        partial = None if complete else _Partial(params)
        view = params if partial is None else partial
        try:
            mechanism = self.privacy(view)
        except _Incomplete:
            return None
        except Exception as exc:  # noqa: BLE001 - reported by type only (the message is the user's)
            raise CandidatePrivacyError(f"privacy(params) raised {type(exc).__name__} on a drawn candidate's "
                                        "params; nothing was released") from None
        if partial is not None and partial.incomplete:  # it caught the deferral and fell back to something
            return None
        if not isinstance(mechanism, Mechanism):
            raise CandidatePrivacyError(f"privacy(params) must return a Mechanism, got {type(mechanism).__name__}")
        return mechanism if self.score_noise is None else compose(mechanism, self.score_noise)

    def problem(self, params: Mapping[str, Any], complete: bool = True) -> str | None:  # pragma: no cover
        raise NotImplementedError

    def __call__(self, params: Mapping[str, Any]) -> None:
        """Raise [`CandidatePrivacyError`][privselect.errors.CandidatePrivacyError] if ``params`` fail the check."""
        problem = self.problem(params)
        if problem is not None:
            raise CandidatePrivacyError(problem)


@dataclass(frozen=True)
class _LawCheck(CandidateCheck):
    """The candidate's mechanism must be the one the mixture certificate assumed for its declared values."""

    names: tuple[str, ...] = ()
    continuous: frozenset = frozenset()
    mechanisms: tuple = ()

    def problem(self, params: Mapping[str, Any], complete: bool = True) -> str | None:
        try:
            actual = self.actual(params, complete)
        except CandidatePrivacyError as exc:
            return str(exc)
        if actual is None:
            return None
        declared = {name: params[name] for name in self.names if name in params and name not in self.continuous}
        try:
            assumed = probe_privacy(self.privacy, Probe(self.names, declared, self.continuous))
        except Exception as exc:  # noqa: BLE001 - a declared hyperparameter it reads is missing from the candidate
            return (f"privacy(params) could not be evaluated on the candidate's declared hyperparameters alone "
                    f"({type(exc).__name__}): the candidate lacks one that the certificate's law reads; nothing was "
                    "released")
        if self.score_noise is not None:
            assumed = compose(assumed, self.score_noise)
        if actual == assumed and assumed in self.mechanisms:
            return None
        reason = ("the declared hyperparameters take a value outside their declared law" if actual == assumed else
                  "privacy(params) depends on something the declaration does not cover (an undeclared "
                  "hyperparameter, a default, or state other than params)")
        return (f"a drawn candidate's privacy is {actual!r}, but the certificate assumed {assumed!r} for it: {reason}. "
                f"Declare the law of every hyperparameter that privacy(params) reads (declared: "
                f"{', '.join(self.names)}); nothing was released")


@dataclass(frozen=True)
class _Cor62Check(CandidateCheck):
    """Refuse a candidate above the Cor. 6.2 thresholds."""

    thresholds: Any = None
    accountant: str | Accountant = "auto"
    options: dict = field(default_factory=dict)

    def problem(self, params: Mapping[str, Any], complete: bool = True) -> str | None:
        from ..selection.calibrate import meets_thresholds

        try:
            mechanism = self.actual(params, complete)
        except CandidatePrivacyError as exc:
            return str(exc)
        if mechanism is None or meets_thresholds(mechanism, self.thresholds, accountant=self.accountant,
                                                 **self.options):
            return None
        th = self.thresholds
        return (f"a drawn candidate ({mechanism!r}) exceeds the Cor. 6.2 thresholds ({th.eps1:.4g}, {th.delta1:.3g}) "
                f"and ({th.eps_hat:.4g}, {th.delta_hat:.3g}); nothing was released. Narrow the search space or raise "
                "base_epsilon.")


def k_released_certificate(base: Mechanism, k: KDistribution, delta: float, accountant: str | Accountant,
                           options: dict[str, Any]) -> Certificate:
    """Certificate when K is released: ``certify(..., bound="mixture")`` (the K-mixture bound,
    [`privselect.selection.bounds.mixture`][privselect.selection.bounds.mixture])."""
    return certify(base, k, delta, bound="mixture", accountant=accountant, **options)
