"""DP-SGD for logistic (softmax) regression in numpy, and a trainer for [`PrivateTuner`][privselect.tuning.tuner.PrivateTuner].

Abadi et al. 2016: at each of T = ceil(epochs / q) steps, take a Poisson subsample (each
record with probability q), clip every per-example gradient to L2 norm ``clip_norm``, sum,
add N(0, (noise_multiplier * clip_norm)^2) to every coordinate, divide by the expected batch
size q * n, and step. Under add/remove neighbours one run is exactly

    Gaussian(noise_multiplier).poisson_subsample(q).compose(T)

([`DPSGDClassifier.privacy`][privselect.apps.dpsgd.DPSGDClassifier.privacy]), whatever the learning rate and clipping norm; n (hence
q = batch_size / n) is treated as public, as is customary.

What the fitted model holds is what a release would show, so it holds no randomness state and
nothing read from the data beyond the noisy weights:

* the label set is the public ``classes`` parameter, never ``unique_labels(y)`` (one record of
  a rare class would otherwise change the shape of ``coef_``). A label outside ``classes``
  matches no class: its one-hot target is all zeros, its gradient is clipped like any other
  (so the privacy is unchanged), and nothing raises (an error would reveal that such a record
  exists). ``classes=None`` reads the labels from y, for non-private use only; the release
  guard refuses such a model;
* the generator is passed to ``fit(X, y, rng=...)`` and never stored. A model constructed
  with ``random_state=<Generator>`` is fitted with it and left with ``random_state=None``;
  an integer ``random_state`` stays (scikit-learn semantics), and the release guard refuses
  it, since replaying a seed replays the noise.

numpy's generators are not cryptographically secure and floating-point Gaussian sampling
has known side channels: this trainer is for experiments and demonstrations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import unique_labels
from sklearn.utils.validation import check_is_fitted, check_X_y, validate_data

from .. import _validation as check
from ..errors import TrainerContractError
from ..mechanisms import Gaussian, Mechanism

__all__ = ["DPSGDClassifier", "DPSGDTrainer", "dpsgd_steps", "make_dpsgd_trainer"]


def dpsgd_steps(epochs: float, sampling_rate: float) -> int:
    """Number of DP-SGD steps for ``epochs`` passes at Poisson rate q: ceil(epochs / q)."""
    return math.ceil(check.positive("epochs", epochs) / check.half_open_unit("sampling_rate", sampling_rate))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class DPSGDClassifier(ClassifierMixin, BaseEstimator):
    """Softmax (multinomial logistic) regression trained with DP-SGD.

    Parameters follow scikit-learn conventions and are validated in [`fit`][privselect.apps.dpsgd.DPSGDClassifier.fit].
    ``classes`` is the public label set (see the module docstring); ``random_state`` may be
    None, an int or a ``numpy.random.Generator`` (used once, then dropped); prefer
    ``fit(X, y, rng=run_rng)``.
    """

    def __init__(self, learning_rate: float = 0.5, clip_norm: float = 1.0, noise_multiplier: float = 1.0,
                 sampling_rate: float = 0.05, epochs: float = 10, fit_intercept: bool = True,
                 random_state: Any = None, classes: Any = None) -> None:
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.noise_multiplier = noise_multiplier
        self.sampling_rate = sampling_rate
        self.epochs = epochs
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.classes = classes

    @property
    def privacy(self) -> Mechanism:
        """The privacy of one call to [`fit`][privselect.apps.dpsgd.DPSGDClassifier.fit] (add/remove neighbours)."""
        q = check.half_open_unit("sampling_rate", self.sampling_rate)
        gaussian = Gaussian(self.noise_multiplier)
        step = gaussian.poisson_subsample(q) if q < 1 else gaussian
        return step.compose(dpsgd_steps(self.epochs, q))

    def _design(self, X: np.ndarray) -> np.ndarray:
        return np.hstack([X, np.ones((X.shape[0], 1))]) if self.fit_intercept else X

    def fit(self, X, y, rng: np.random.Generator | None = None):
        """Train with DP-SGD; ``rng`` (the run's generator) is used and not stored."""
        X, y = check_X_y(X, y, dtype=float)
        validate_data(self, X, reset=True, skip_check_array=True)
        lr = check.positive("learning_rate", self.learning_rate)
        clip = check.positive("clip_norm", self.clip_norm)
        sigma = check.positive("noise_multiplier", self.noise_multiplier)
        q = check.half_open_unit("sampling_rate", self.sampling_rate)
        steps = dpsgd_steps(self.epochs, q)
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")
        if rng is None:
            rng = self.random_state if isinstance(self.random_state, np.random.Generator) else np.random.default_rng(
                self.random_state)
        if isinstance(self.random_state, np.random.Generator):
            self.random_state = None  # never released with the model (module docstring)
        if self.classes is None:
            self.classes_ = unique_labels(y)  # NOT private: the release guard refuses this model
            self._labels_from_data = True
        else:
            self.classes_ = np.asarray(self.classes)
            if self.classes_.ndim != 1 or len(np.unique(self.classes_)) != self.classes_.size:
                raise ValueError(f"classes must be a 1-d sequence of distinct labels, got {self.classes!r}")
            self._labels_from_data = False
        if self.classes_.size < 2:
            raise ValueError(f"DPSGDClassifier needs at least two classes; got 1 class ({self.classes_[0]!r})")
        Z = self._design(X)
        n, d = Z.shape
        c = self.classes_.size
        onehot = (y[:, None] == self.classes_[None, :]).astype(float)
        W = np.zeros((d, c))
        expected_batch = q * n
        for _ in range(steps):
            batch = np.flatnonzero(rng.random(n) < q)
            grad_sum = np.zeros_like(W)
            if batch.size:
                Zb = Z[batch]
                residual = _softmax(Zb @ W) - onehot[batch]                     # (b, c)
                # per-example gradient g_i = z_i r_i^T; ||g_i||_F = ||z_i|| ||r_i||
                norms = np.linalg.norm(Zb, axis=1) * np.linalg.norm(residual, axis=1)
                scale = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
                grad_sum = Zb.T @ (residual * scale[:, None])
            noise = rng.normal(0.0, sigma * clip, size=W.shape)
            W -= lr * (grad_sum + noise) / expected_batch
        self.coef_ = W
        return self

    def __privselect_release_problems__(self) -> list[str]:
        """Checked by the tuner's release guard."""
        if getattr(self, "_labels_from_data", False):
            return ["classes_ was read from the private labels; pass the public label set as classes="]
        return []

    def _logits(self, X) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=float)
        return self._design(X) @ self.coef_

    def decision_function(self, X) -> np.ndarray:
        """Logits per class; for two classes, the logit difference (scikit-learn convention)."""
        logits = self._logits(X)
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X) -> np.ndarray:
        return _softmax(self._logits(X))

    def predict(self, X) -> np.ndarray:
        logits = self._logits(X)
        return self.classes_[np.argmax(logits, axis=1)]


TUNABLE = ("learning_rate", "clip_norm", "epochs", "fit_intercept")


def make_dpsgd_trainer(noise_multiplier: float, sampling_rate: float, *, classes: Any) -> DPSGDTrainer:
    """A ``train(params, data, rng)`` for [`PrivateTuner`][privselect.tuning.tuner.PrivateTuner] (picklable, for process backends).

    ``data = (X_train, y_train, X_val, y_val)``; ``classes`` is the public label set;
    ``params`` may set ``learning_rate``, ``clip_norm``, ``epochs`` and ``fit_intercept``
    (``noise_multiplier`` and ``sampling_rate`` are fixed here, since they set the privacy:
    tune them with ``privacy=callable``). Returns the RAW count of correct validation
    predictions (sensitivity 1 under add/remove) and the model: pass
    ``score_noise=ps.Laplace(b)`` (or ``ps.Gaussian``) to the tuner so the score is
    privatised and its noise accounted for. The privacy of one run is that of
    [`DPSGDClassifier.privacy`][privselect.apps.dpsgd.DPSGDClassifier.privacy] at the largest ``epochs`` in the search space.
    """
    if classes is None:
        raise ValueError("classes (the public label set) is required: it is never read from the private labels")
    return DPSGDTrainer(check.positive("noise_multiplier", noise_multiplier),
                        check.half_open_unit("sampling_rate", sampling_rate), tuple(np.asarray(classes).tolist()))


@dataclass(frozen=True)
class DPSGDTrainer:
    """``train(params, data, rng)`` for DP-SGD; see [`make_dpsgd_trainer`][privselect.apps.dpsgd.make_dpsgd_trainer]."""

    noise_multiplier: float
    sampling_rate: float
    classes: tuple

    def __call__(self, params: dict[str, Any], data: Any, rng: np.random.Generator) -> tuple[float, DPSGDClassifier]:
        unknown = sorted(set(params) - set(TUNABLE))
        if unknown:
            raise TrainerContractError(
                f"make_dpsgd_trainer tunes {TUNABLE}; got {unknown}. noise_multiplier and sampling_rate set the "
                "privacy: tune them with privacy=callable(params) and a trainer of your own")
        X_train, y_train, X_val, y_val = data
        model = DPSGDClassifier(noise_multiplier=self.noise_multiplier, sampling_rate=self.sampling_rate,
                                classes=self.classes, **params)
        model.fit(X_train, y_train, rng=rng)
        correct = float(np.sum(model.predict(X_val) == y_val))
        return correct, model
