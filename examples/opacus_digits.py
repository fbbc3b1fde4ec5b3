"""Tune an Opacus (PyTorch) DP-SGD trainer privately on scikit-learn's digits (run: python examples/opacus_digits.py).

A small MLP trained with Opacus on CPU. The learning rate, the clipping norm and the number of
epochs are tuned; the epochs change the privacy of a run, so ``privacy`` is a function of the
hyperparameters. The same trainer runs through ``PrivateTuner`` and through ``PrivateStudy``.
Each run's randomness (initial weights, Poisson batches, gradient noise) comes from the run's
``rng``; the winner is released as a ``state_dict``. Needs ``pip install 'privselect[opacus]'``.
"""

import numpy as np
import torch
from opacus import PrivacyEngine
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import privselect as ps
from privselect.integrations import opacus as ps_opacus
from privselect.integrations.optuna import PrivateStudy
from privselect.tuning.space import Choice, LogUniform

NOISE, BATCH, EPOCHS = 1.0, 50, [5, 10, 15]
N_TRAIN, N_VAL = 1000, 300  # public sizes
DELTA, K = 1e-5, ps.Geometric(mean=8)
SCORE_NOISE = ps.Laplace(2.0)  # on the count of correct validation predictions (sensitivity 1)
torch.set_num_threads(1)  # a tiny model: on a busy 2-core machine, threads cost far more than they give
SPACE = {"lr": LogUniform(0.05, 1.0), "max_grad_norm": LogUniform(0.3, 3.0), "epochs": Choice(EPOCHS)}


def load_data(seed=0):
    """Digits scaled by their PUBLIC bounds (pixels are in [0, 16]): nothing is fitted on private data."""
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(y))
    train, val, test = np.split(order, [N_TRAIN, N_TRAIN + N_VAL])
    return (X[train], y[train], X[val], y[val]), (X[test], y[test])


def mlp(generator):
    """A 64-32-10 MLP whose initial weights are drawn from ``generator`` (torch's default init law)."""
    net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    with torch.no_grad():
        for layer in (net[0], net[2]):
            bound = layer.in_features ** -0.5
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.uniform_(-bound, bound, generator=generator)
    return net


def fit_private(params, X_train, y_train, rng, engine=None):
    """Train the MLP with Opacus; every random number comes from ``rng``. Returns the trained module."""
    net = mlp(ps_opacus.generator(rng))                   # initial weights
    noise, sampler = ps_opacus.generators(rng)            # Opacus's gradient noise, the Poisson batches
    loader = DataLoader(TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)),
                        batch_size=BATCH, generator=sampler)
    model, optimizer, loader = (engine or PrivacyEngine()).make_private(
        module=net, optimizer=torch.optim.SGD(net.parameters(), lr=params["lr"]), data_loader=loader,
        noise_multiplier=NOISE, max_grad_norm=params["max_grad_norm"], noise_generator=noise)
    for _ in range(params["epochs"]):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
    return net


def train_opacus(params, data, rng):
    """One private training run: (correct validation predictions, state_dict)."""
    X_train, y_train, X_val, y_val = data
    net = fit_private(params, X_train, y_train, rng)
    with torch.no_grad():
        correct = (net(torch.from_numpy(X_val)).argmax(1).numpy() == y_val).sum()
    # release the weights only, as fresh tensors: never the module (its parameters keep Opacus's per-sample
    # gradients), the optimizer (its .generator) or the loader
    return float(correct), ps_opacus.weights(net)


def privacy(params):
    """One run, from Opacus's own numbers: q = 1 / len(data_loader), steps = epochs * int(1 / q)."""
    shape_only = DataLoader(range(N_TRAIN), batch_size=BATCH)  # the public size, never the data
    return ps_opacus.description(NOISE, data_loader=shape_only, epochs=params["epochs"])


def accuracy(state_dict, X, y):
    net = mlp(None)
    net.load_state_dict(state_dict)
    with torch.no_grad():
        return float((net(torch.from_numpy(X)).argmax(1).numpy() == y).mean())


def tune_with_tuner(data, seed=None):
    tuner = ps.PrivateTuner(train_opacus, SPACE, privacy, K, DELTA, score_noise=SCORE_NOISE, seed=seed)
    return tuner.run(data)


def tune_with_study(data, seed=None):
    def objective(trial):
        params = {"lr": trial.suggest_float("lr", 0.05, 1.0, log=True),
                  "max_grad_norm": trial.suggest_float("max_grad_norm", 0.3, 3.0, log=True),
                  "epochs": trial.suggest_categorical("epochs", EPOCHS)}
        return train_opacus(params, data, trial.rng)

    study = PrivateStudy(privacy, K, DELTA, privacy_space={"epochs": Choice(EPOCHS)}, score_noise=SCORE_NOISE,
                         seed=seed)
    return study.optimize(objective)


def one_run_epsilon(epochs=max(EPOCHS)):  # noqa: B008 - EPOCHS is a module constant
    """What one run alone costs (with its noisy score): NOT a bound for the tuning."""
    one = ps.compose(privacy({"epochs": epochs}), SCORE_NOISE)
    return float(ps.privacy_profile(one).epsilon(DELTA))


if __name__ == "__main__":
    data, (X_test, y_test) = load_data()
    for name, tune in (("PrivateTuner", tune_with_tuner), ("PrivateStudy", tune_with_study)):
        result = tune(data)  # seed=None: fresh entropy (a seed is a secret key)
        print(f"{name}: best {result.best_params}, test accuracy {accuracy(result.best_output, X_test, y_test):.3f}")
        print(f"  certificate: {result.certificate}")
    print(f"one run alone ({max(EPOCHS)} epochs, noisy score): epsilon = {one_run_epsilon():.3f} at delta = {DELTA}")
