"""The privacy of one run, as both front ends declare it, and the question they put to ``certify``.

The front ends never compute privacy: they turn what the user declared into the argument of
[`certify`][privselect.selection.certify.certify] (a Mechanism, a PrivacyProfile, or, when the
hyperparameters change the privacy, the law of the run's mechanism over the search space) and
ask it. ``score_noise`` is composed into the run's mechanism first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from ..accounting.average import HyperparameterMixture
from ..accounting.profile import PrivacyProfile
from ..errors import CandidatePrivacyError
from ..mechanisms import Gaussian, Laplace, Mechanism, compose
from ..selection.certificate import Certificate, certify
from ..selection.distributions import KDistribution
from .space import ContinuousDependence, SearchSpace, privacy_law

__all__ = ["RunPrivacy", "CandidatePrivacyError"]


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

    def certificate(self, k: KDistribution, delta: float, *, reveal_k: bool = False, accountant: str = "auto",
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
            return cor62_certificate(cor62_thresholds(self.base_epsilon, delta, k), k, "candidates checked at run",
                                     accountant, (self.continuous_reason,))
        if isinstance(base, PrivacyProfile):
            return certify(base, k, delta)
        if isinstance(base, HyperparameterMixture):
            return certify(base, k, delta, accountant=accountant, base_epsilon=self.base_epsilon, **options)
        return certify(base, k, delta, accountant=accountant, **options)

    def candidate_check(self, k: KDistribution, delta: float, accountant: str,
                        accountant_options: Mapping[str, Any] | None) -> Callable[[Any], None] | None:
        """With continuous privacy hyperparameters: a check each drawn candidate must pass (else None)."""
        if self.base is not None:
            return None
        from ..selection.calibrate import cor62_thresholds

        return _Cor62Check(self.privacy, self.score_noise, cor62_thresholds(self.base_epsilon, delta, k), accountant,
                           dict(accountant_options or {}))


@dataclass(frozen=True)
class _Cor62Check:
    """Refuse a candidate above the Cor. 6.2 thresholds (a data-independent check; picklable)."""

    privacy: Callable[[Any], Mechanism]
    score_noise: Gaussian | Laplace | None
    thresholds: Any
    accountant: str
    options: dict

    def __call__(self, params: Any) -> None:
        from ..selection.calibrate import meets_thresholds

        mechanism = self.privacy(params)
        if not isinstance(mechanism, Mechanism):
            raise CandidatePrivacyError(f"privacy(params) must return a Mechanism, got {type(mechanism).__name__}")
        if self.score_noise is not None:
            mechanism = compose(mechanism, self.score_noise)
        if not meets_thresholds(mechanism, self.thresholds, accountant=self.accountant, **self.options):
            th = self.thresholds
            raise CandidatePrivacyError(
                f"a drawn candidate ({mechanism!r}) exceeds the Cor. 6.2 thresholds ({th.eps1:.4g}, {th.delta1:.3g}) "
                f"and ({th.eps_hat:.4g}, {th.delta_hat:.3g}); nothing was released. Narrow the search space or raise "
                "base_epsilon.")


def k_released_certificate(base: Mechanism, k: KDistribution, delta: float, accountant: str,
                           options: dict[str, Any]) -> Certificate:
    """Certificate when K is released: ``certify(..., bound="mixture")`` (the K-mixture bound,
    [`privselect.selection.bounds.mixture`][privselect.selection.bounds.mixture])."""
    return certify(base, k, delta, bound="mixture", accountant=accountant, **options)
