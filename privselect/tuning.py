"""PrivateTuner: private hyperparameter selection around any DP trainer.

The procedure (Liu, Talwar 2019; Papernot, Steinke 2022; Koskela, Redberg, Wang 2024):

1. draw K from a data-independent distribution, once, before anything touches the data;
2. draw K candidates i.i.d. from the search space (data-independent, no adaptivity);
3. run the (DP) trainer on every candidate; every run completes;
4. release the best run only: its hyperparameters, score and output, and one certificate
   for the whole procedure, ``ps.certify(privacy, k, delta)``.

Release rules, enforced here and tested in ``tests/test_tuning.py``:

* no early stopping, pruning, timeouts or retries inside a run;
* a run that raises, or returns a NaN or infinite score, scores the worst value
  (``-inf`` when maximising); its exception is swallowed, never re-raised or logged;
* nothing about the other candidates leaves :meth:`PrivateTuner.run`: the result holds
  the winner only, logging (DEBUG) carries only data-independent facts (K, backend),
  the progress bar counts runs, and nothing is printed;
* K = 0 (possible for Poisson and binomial K) releases nothing but the fact that K = 0;
* K itself is NOT released: the selection theorems bound the winner alone, and the pair
  (K, winner) can be far less private (for a pure eps-DP binary score, best-of-k has
  likelihood ratio e^{k eps}). ``reveal_k=True`` releases K as ``n_runs`` and certifies with
  the K-mixture bound (:mod:`privselect.selection.mixture`) instead. The optional progress
  bar counts runs on the operator's terminal, which shows K: do not publish it.

The score is part of the DP output of a run. Either the trainer privatises it (e.g. a noisy
validation accuracy whose noise is included in ``privacy``) or the tuner does it: pass
``score_noise=ps.Laplace(b, sensitivity=s)`` (or ``ps.Gaussian``) and the trainer's raw score
(of sensitivity ``s``) gets that noise, and the noise mechanism is composed into ``privacy``.
The privacy you declare must cover everything the trainer does, failures included: a crash
that depends on the data is part of the mechanism.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import _validation as check
from .accounting.profile import ErrorBudget, PrivacyProfile
from .mechanisms import Gaussian, Laplace, Mechanism, compose
from .selection import Binomial, Poisson, TruncatedNegativeBinomial
from .selection.calibrate import Cor62Thresholds, cor62_thresholds, largest_mean, meets_thresholds
from .selection.certificate import Certificate, certify
from .selection.distributions import KDistribution
from .space import SearchSpace, sample_candidates, validate_space

__all__ = ["PrivateTuner", "TuningResult", "BACKENDS"]

logger = logging.getLogger(__name__)

BACKENDS = ("sequential", "loky", "threading", "dask", "ray")


@dataclass(frozen=True, repr=False)
class TuningResult:
    """What leaves the tuner: the winner only, and the certificate of the whole procedure."""

    best_params: Any
    best_score: float | None
    best_output: Any
    selected: bool
    certificate: Certificate
    n_runs: int | None = None  # K, released only with reveal_k=True

    def to_dict(self) -> dict[str, Any]:
        out = {
            "best_params": self.best_params,
            "best_score": self.best_score,
            "selected": self.selected,
            "certificate": self.certificate.to_dict(),
        }
        if self.n_runs is not None:
            out["n_runs"] = self.n_runs
        return out

    def __repr__(self) -> str:
        k = "" if self.n_runs is None else f", n_runs={self.n_runs}"
        if not self.selected:
            return f"TuningResult(nothing selected (K = 0){k}, certificate={self.certificate})"
        return (f"TuningResult(best_params={self.best_params!r}, best_score={self.best_score!r}{k}, "
                f"certificate={self.certificate})")


@dataclass(frozen=True)
class _RunSpec:
    """Everything one run needs; picklable for process and cluster backends."""

    train: Callable[..., Any]
    score_noise: Gaussian | Laplace | None


def _noise(score_noise: Gaussian | Laplace, rng: np.random.Generator) -> float:
    if isinstance(score_noise, Gaussian):
        return float(rng.normal(0.0, score_noise.noise_multiplier * score_noise.sensitivity))
    return float(rng.laplace(0.0, score_noise.scale * score_noise.sensitivity))


def score_and_output(returned: Any) -> tuple[float, Any]:
    """Split a trainer's return value into (float score, output); raises if the score is not a number."""
    if isinstance(returned, tuple) and len(returned) == 2:
        score, output = returned
    else:
        score, output = returned, None
    return float(score), output


def _run_one(spec: _RunSpec, params: Any, data: Any, seed: np.random.SeedSequence) -> tuple[float, Any]:
    """One run: (score, output), with NaN for a failed run. Never raises (Exception subclasses)."""
    train_seed, noise_seed = seed.spawn(2)
    try:
        score, output = score_and_output(spec.train(params, data, np.random.Generator(np.random.PCG64(train_seed))))
    except Exception:  # noqa: BLE001 - the release rules: swallow, score the worst value
        return math.nan, None
    if spec.score_noise is not None and math.isfinite(score):
        score += _noise(spec.score_noise, np.random.Generator(np.random.PCG64(noise_seed)))
    if not math.isfinite(score):
        return math.nan, None
    return score, output


def _execute(spec: _RunSpec, candidates: list[Any], data: Any, seeds: list[np.random.SeedSequence], *,
             n_jobs: int, backend: str, progress: bool):
    """Yield (score, output) in candidate order, on the requested backend."""
    tasks = zip(candidates, seeds)
    if backend == "sequential" or n_jobs == 1:
        yield from _with_progress((_run_one(spec, params, data, seed) for params, seed in tasks), len(candidates),
                                  progress)
        return
    import joblib

    if backend == "ray":
        try:
            from ray.util.joblib import register_ray
        except ImportError:
            raise ImportError("backend='ray' needs the ray extra: pip install 'privselect[ray]'") from None
        register_ray()
    if backend == "dask":
        try:
            import distributed  # noqa: F401  (joblib's dask backend needs a distributed Client)
        except ImportError:
            raise ImportError("backend='dask' needs the dask extra: pip install 'privselect[dask]'") from None
    # parallel_config resolves the external backends (dask, ray) by name; keep it open while yielding.
    with joblib.parallel_config(backend=backend, n_jobs=n_jobs):
        parallel = joblib.Parallel(return_as="generator")
        results = parallel(joblib.delayed(_run_one)(spec, params, data, seed) for params, seed in tasks)
        yield from _with_progress(results, len(candidates), progress)


def _with_progress(results, total: int, progress: bool):
    """Wrap an iterator of runs in a tqdm bar that counts runs (never shows scores)."""
    if not progress:
        return results
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError("progress=True needs tqdm: pip install 'privselect[progress]'") from None
    return tqdm(results, total=total, desc="privselect runs", unit="run")


class PrivateTuner:
    """Tune a DP trainer privately: random K runs, release the best, certify the whole procedure.

    Parameters
    ----------
    train : callable ``train(params, data, rng) -> score | (score, output)``
        One DP training run. ``rng`` is the run's own ``numpy.random.Generator``.
    search_space : dict of ``privselect.space`` distributions, or ``callable(rng) -> params``
    privacy : Mechanism, PrivacyProfile, or callable ``params -> Mechanism``
        The privacy of ONE run. A callable means hyperparameters change the privacy; then
        ``base_epsilon`` (eps_Q of KRW Sec. 6.2) sets Cor. 6.2 thresholds and every drawn
        candidate must meet them, checked before any run.
    k : KDistribution
        Distribution of the number of runs (``ps.Geometric(mean=10)``, ...).
    delta : float
        Target delta of the certificate.
    direction : "maximize" or "minimize"
    seed : int or None
        Seeds one ``SeedSequence`` from which K, the candidates and every run's generator
        are spawned: same seed, same result, whatever the backend.
    n_jobs, backend : parallel execution through joblib ("loky", "threading", "dask", "ray")
        or "sequential".
    progress : show a tqdm bar of runs done (never scores).
    score_noise : ps.Gaussian or ps.Laplace, optional
        Noise the tuner adds to the trainer's raw score (noise scale = parameter x the
        mechanism's ``sensitivity``, the raw score's sensitivity); composed into ``privacy``.
    base_epsilon : float, optional
        eps_Q for Cor. 6.2 thresholds, required when ``privacy`` is a callable.
    reveal_k : bool
        Release K as ``result.n_runs``; the certificate is then the K-mixture bound.
    accountant : "prv" or "cf"; ``accountant_options`` are passed to it.
    """

    def __init__(self, train: Callable[..., Any], search_space: SearchSpace, privacy: Any, k: KDistribution,
                 delta: float, *, direction: str = "maximize", seed: int | None = None, n_jobs: int = 1,
                 backend: str = "loky", progress: bool = False, score_noise: Gaussian | Laplace | None = None,
                 base_epsilon: float | None = None, reveal_k: bool = False, accountant: str = "prv",
                 accountant_options: dict[str, Any] | None = None) -> None:
        if not callable(train):
            raise TypeError("train must be callable: train(params, data, rng) -> score or (score, output)")
        self.train = train
        self.search_space = validate_space(search_space)
        if not (isinstance(privacy, (Mechanism, PrivacyProfile)) or callable(privacy)):
            raise TypeError("privacy must be a Mechanism, a PrivacyProfile, or a callable params -> Mechanism")
        self.privacy = privacy
        if not isinstance(k, KDistribution):
            raise TypeError(f"k must be a distribution of K (e.g. ps.Geometric(mean=10)), got {type(k).__name__}")
        self.k = k
        self.delta = check.delta_scalar("delta", delta)
        if not isinstance(direction, str) or direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        self.direction = direction
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        self.seed = seed
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
            raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
        self.n_jobs = n_jobs
        if not isinstance(backend, str) or backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        self.progress = bool(progress)
        if score_noise is not None and not isinstance(score_noise, (Gaussian, Laplace)):
            raise TypeError("score_noise must be ps.Gaussian(...) or ps.Laplace(...)")
        if score_noise is not None and isinstance(privacy, PrivacyProfile):
            raise ValueError("score_noise needs privacy as a Mechanism (a built profile cannot be composed)")
        self.score_noise = score_noise
        self.heterogeneous = callable(privacy) and not isinstance(privacy, (Mechanism, PrivacyProfile))
        if self.heterogeneous:
            if base_epsilon is None:
                raise ValueError("a callable privacy needs base_epsilon (eps_Q of KRW Sec. 6.2 / Cor. 6.2)")
            if not isinstance(k, TruncatedNegativeBinomial):
                raise ValueError("candidates with different privacy are certified by KRW Cor. 6.2, which needs a "
                                 "truncated negative binomial K (Geometric, Logarithmic, TruncatedNegativeBinomial)")
        self.base_epsilon = None if base_epsilon is None else check.positive("base_epsilon", base_epsilon)
        self.reveal_k = bool(reveal_k)
        if self.reveal_k and not isinstance(privacy, Mechanism):
            raise ValueError("reveal_k=True composes the base run: privacy must be a Mechanism")
        self.accountant = accountant
        self.accountant_options = dict(accountant_options or {})
        self._certificate: Certificate | None = None

    # -- privacy ----------------------------------------------------------------------------

    def _with_score_noise(self, mechanism: Mechanism) -> Mechanism:
        return mechanism if self.score_noise is None else compose(mechanism, self.score_noise)

    def thresholds(self) -> Cor62Thresholds:
        """KRW Cor. 6.2 thresholds every candidate must meet (callable privacy only)."""
        if not self.heterogeneous:
            raise ValueError("thresholds apply when privacy is a callable params -> Mechanism")
        return cor62_thresholds(self.base_epsilon, self.delta, self.k)

    @property
    def certificate(self) -> Certificate:
        """The certificate of the whole procedure; depends on privacy, k and delta only (not on data)."""
        if self._certificate is None:
            if self.reveal_k:
                self._certificate = _mixture_certificate(self._with_score_noise(self.privacy), self.k, self.delta,
                                                         self.accountant, self.accountant_options)
            elif self.heterogeneous:
                th = self.thresholds()
                self._certificate = Certificate(
                    epsilon=th.epsilon, delta=self.delta, method="profile",
                    bound="Koskela-Redberg-Wang 2024, Cor. 6.2", alternatives={"profile": th.epsilon}, k=self.k,
                    base=f"any candidate that is ({th.eps1:.6g}, {th.delta1:.3g})-DP and "
                         f"({th.eps_hat:.6g}, {th.delta_hat:.3g})-DP",
                    accountant=self.accountant, error_budget=ErrorBudget(),
                )
            else:
                base = self.privacy if isinstance(self.privacy, PrivacyProfile) else self._with_score_noise(self.privacy)
                options = {} if isinstance(base, PrivacyProfile) else self.accountant_options
                self._certificate = certify(base, self.k, self.delta, accountant=self.accountant, **options)
        return self._certificate

    def calibrate(self, target_epsilon: float, family: Callable[[float], KDistribution] | None = None) -> "PrivateTuner":
        """Set K to the largest mean (same family unless ``family`` is given) meeting ``target_epsilon``."""
        if self.heterogeneous or self.reveal_k:
            raise ValueError("calibrate supports the selection certificate (fixed privacy per run, K not revealed)")
        if family is None:
            family = _same_family(self.k)
        base = self.privacy if isinstance(self.privacy, PrivacyProfile) else self._with_score_noise(self.privacy)
        options = {} if isinstance(base, PrivacyProfile) else {"accountant": self.accountant, **self.accountant_options}
        min_mean = 1.0 + 1e-9 if isinstance(self.k, TruncatedNegativeBinomial) else 1e-3
        mean = largest_mean(base, target_epsilon, self.delta, family=family, min_mean=min_mean, **options)
        self.k = family(mean)
        self._certificate = None
        return self

    # -- running ----------------------------------------------------------------------------

    def run(self, data: Any) -> TuningResult:
        """Run the private selection on ``data``; release the best run and the certificate."""
        certificate = self.certificate  # data-independent; computed before anything runs
        root = np.random.SeedSequence(self.seed)
        k_seed, candidate_seed, runs_seed = root.spawn(3)
        n_runs = self.k.sample(np.random.Generator(np.random.PCG64(k_seed)))
        revealed = n_runs if self.reveal_k else None
        logger.debug("drew K from %r", self.k)  # K itself stays inside unless reveal_k
        candidates = sample_candidates(self.search_space, n_runs, np.random.Generator(np.random.PCG64(candidate_seed)))
        if self.heterogeneous:
            self._check_candidates(candidates)
        if n_runs == 0:
            return TuningResult(None, None, None, False, certificate, revealed)
        seeds = runs_seed.spawn(n_runs)
        spec = _RunSpec(self.train, self.score_noise)
        logger.debug("running the candidates (backend=%s, n_jobs=%d)", self.backend, self.n_jobs)
        sign = 1.0 if self.direction == "maximize" else -1.0
        best_index, best_key, best_output = 0, -math.inf, None
        best_score = -math.inf if self.direction == "maximize" else math.inf
        for index, (score, output) in enumerate(_execute(spec, candidates, data, seeds, n_jobs=self.n_jobs,
                                                         backend=self.backend, progress=self.progress)):
            key = sign * score if math.isfinite(score) else -math.inf
            if index == 0 or key > best_key:
                best_index, best_key, best_output = index, key, (output if math.isfinite(score) else None)
                best_score = score if math.isfinite(score) else best_score
        logger.debug("finished all runs")
        return TuningResult(candidates[best_index], best_score, best_output, True, certificate, revealed)

    def _check_candidates(self, candidates: list[Any]) -> None:
        """Refuse, before any run, a candidate whose privacy exceeds the Cor. 6.2 thresholds."""
        th = self.thresholds()
        cache: dict[Mechanism, bool] = {}
        for params in candidates:
            mechanism = self.privacy(params)
            if not isinstance(mechanism, Mechanism):
                raise TypeError(f"privacy(params) must return a Mechanism, got {type(mechanism).__name__}")
            mechanism = self._with_score_noise(mechanism)
            if mechanism not in cache:
                cache[mechanism] = meets_thresholds(mechanism, th, method=self.accountant, **self.accountant_options)
            if not cache[mechanism]:
                raise ValueError(
                    f"candidate {params!r} ({mechanism!r}) exceeds the Cor. 6.2 thresholds "
                    f"({th.eps1:.4g}, {th.delta1:.3g}) and ({th.eps_hat:.4g}, {th.delta_hat:.3g}); "
                    "no run was started. Narrow the search space or raise base_epsilon."
                )


def _mixture_certificate(base: Mechanism, k: KDistribution, delta: float, accountant: str,
                         options: dict[str, Any]) -> Certificate:
    """Certificate when K is released: the K-mixture bound (:mod:`privselect.selection.mixture`)."""
    from .selection.mixture import k_mixture_profile

    profile = k_mixture_profile(base, k, method=accountant, **options)
    epsilon = float(profile.epsilon(delta))
    return Certificate(epsilon=epsilon, delta=delta, method="mixture",
                       bound="mixture of k-fold compositions (K released)", alternatives={"mixture": epsilon}, k=k,
                       base=repr(base), accountant=accountant, error_budget=profile.error_budget)


def _same_family(k: KDistribution) -> Callable[[float], KDistribution]:
    if isinstance(k, TruncatedNegativeBinomial):
        eta = k.eta
        return lambda mean: TruncatedNegativeBinomial(eta, mean=mean)
    if isinstance(k, Binomial):
        n = k.n
        return lambda mean: Binomial.from_mean(mean, n)
    if isinstance(k, Poisson):
        return lambda mean: Poisson(mean)
    raise TypeError(f"no calibration family for {type(k).__name__}")
