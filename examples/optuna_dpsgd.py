"""Tune DP-SGD with a private Optuna study (run: python examples/optuna_dpsgd.py).

Only three things differ from a plain Optuna study: the study is a PrivateStudy with the privacy
of one trial, optimize() takes no n_trials, and the result carries a certificate.
"""

import numpy as np

import privselect as ps
from privselect.apps.demo import load_digits_split
from privselect.apps.dpsgd import DPSGDClassifier, dpsgd_steps
from privselect.integrations.optuna import PrivateStudy

NOISE, RATE, MAX_EPOCHS = 2.0, 0.05, 20
(X_train, y_train, X_val, y_val), (X_test, y_test) = load_digits_split()
score_noise = ps.Laplace(2.0)  # on the count of correct validation predictions (sensitivity 1)


def objective(trial):
    model = DPSGDClassifier(
        learning_rate=trial.suggest_float("learning_rate", 0.05, 5.0, log=True),
        clip_norm=trial.suggest_float("clip_norm", 0.1, 10.0, log=True),
        epochs=trial.suggest_categorical("epochs", [5, 10, 20]),
        noise_multiplier=NOISE, sampling_rate=RATE,
        classes=range(10),  # the public label set, never read from the private labels
    ).fit(X_train, y_train, rng=trial.rng)  # the trial's generator is used, never stored in the model
    correct = float(np.sum(model.predict(X_val) == y_val))
    return correct + trial.rng.laplace(0.0, score_noise.scale), model


one_trial = ps.compose(ps.Gaussian(NOISE).poisson_subsample(RATE).compose(dpsgd_steps(MAX_EPOCHS, RATE)), score_noise)
# seed=None: fresh entropy. A seed is a secret key (it fixes K, the candidates and every run's noise):
# never publish it, never reuse it on updated data.
study = PrivateStudy(privacy=one_trial, k=ps.Geometric(mean=10), delta=1e-5, seed=None)
result = study.optimize(objective)

if __name__ == "__main__":
    print("best hyperparameters:", result.best_params)
    print("test accuracy:", round(result.best_output.score(X_test, y_test), 3))
    print("certificate:", result.certificate)
