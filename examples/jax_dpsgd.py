"""Tune a JAX DP-SGD loop privately on scikit-learn's digits (run: python examples/jax_dpsgd.py).

A softmax regression trained with DP-SGD written in plain JAX: per-example gradients with
``jax.vmap``, per-example clipping to ``max_grad_norm``, Gaussian noise ``NOISE * max_grad_norm``
on the clipped sum, and Poisson batches (each record in each step independently with probability
``Q``: a Bernoulli mask over the training set, so shapes stay static). The privacy of one run is
given as a dp-accounting ``DpEvent``, as a jax-privacy user writes it, and read by
``ps.from_dp_event``. All randomness of a run (initial weights, batches, noise) comes from a JAX
key drawn from the run's ``rng``; the key never leaves the run. The winner's weights are
``jax.Array`` values, released as numpy arrays. Needs ``pip install 'privselect[jax,interop]'``.
"""

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
from sklearn.datasets import load_digits

import privselect as ps

NOISE, EPOCHS = 1.0, 10
N_TRAIN, N_VAL, BATCH = 1000, 300, 50  # public sizes; BATCH is the expected Poisson batch
Q = BATCH / N_TRAIN
STEPS = EPOCHS * N_TRAIN // BATCH
DELTA, K = 1e-5, ps.Geometric(mean=5)
SCORE_NOISE = ps.Laplace(2.0)  # on the count of correct validation predictions (sensitivity 1)
SPACE = {"lr": ps.LogUniform(0.1, 3.0), "max_grad_norm": ps.LogUniform(0.3, 3.0)}

#: One run as a dp-accounting event (jax-privacy's ``dpsgd_event(NOISE, STEPS, sampling_prob=Q)`` is this event).
EVENT = dp_accounting.SelfComposedDpEvent(
    dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(NOISE)), STEPS)
PRIVACY = ps.from_dp_event(EVENT)


def load_data(seed=0):
    """Digits scaled by their PUBLIC bounds (pixels are in [0, 16]): nothing is fitted on private data."""
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(y))
    train, val, test = np.split(order, [N_TRAIN, N_TRAIN + N_VAL])
    return (X[train], y[train], X[val], y[val]), (X[test], y[test])


def loss(weights, x, y):
    logits = x @ weights["w"] + weights["b"]
    return -jax.nn.log_softmax(logits)[y]


@jax.jit
def dp_sgd(key, X, y, lr, max_grad_norm):
    """STEPS DP-SGD steps on (X, y): Poisson batches, per-example clipping, Gaussian noise."""
    init_key, key = jax.random.split(key)
    weights = {"w": 0.01 * jax.random.normal(init_key, (X.shape[1], 10)), "b": jnp.zeros(10)}
    per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))

    def step(weights, key):
        mask_key, noise_key = jax.random.split(key)
        mask = jax.random.bernoulli(mask_key, Q, (X.shape[0],)).astype(X.dtype)  # Poisson sampling
        grads = per_example(weights, X, y)
        norms = jnp.sqrt(sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in jax.tree.leaves(grads)))
        scale = mask * jnp.minimum(1.0, max_grad_norm / jnp.maximum(norms, 1e-12))
        leaves, tree = jax.tree.flatten(grads)
        noise_keys = jax.random.split(noise_key, len(leaves))
        noisy = [jnp.tensordot(scale, g, axes=1) + NOISE * max_grad_norm * jax.random.normal(k, g.shape[1:])
                 for g, k in zip(leaves, noise_keys)]
        update = jax.tree.unflatten(tree, noisy)
        weights = jax.tree.map(lambda w, u: w - lr * u / BATCH, weights, update)
        return weights, None

    weights, _ = jax.lax.scan(step, weights, jax.random.split(key, STEPS))
    return weights


def train_jax(params, data, rng):
    """One private training run: (correct validation predictions + nothing else, weights)."""
    X_train, y_train, X_val, y_val = data
    key = jax.random.key(int(rng.integers(0, 2**63)))  # the run's randomness: never returned
    weights = dp_sgd(key, X_train, y_train, params["lr"], params["max_grad_norm"])
    correct = int((jnp.argmax(X_val @ weights["w"] + weights["b"], axis=1) == y_val).sum())
    return float(correct), weights  # jax.Array weights: released as numpy arrays


def tune(data, seed=None):
    tuner = ps.PrivateTuner(train_jax, SPACE, PRIVACY, K, DELTA, score_noise=SCORE_NOISE, seed=seed)
    return tuner.run(data)


def accuracy(weights, X, y):
    return float((np.argmax(X @ weights["w"] + weights["b"], axis=1) == y).mean())


if __name__ == "__main__":
    data, (X_test, y_test) = load_data()
    result = tune(data)  # seed=None: fresh entropy (a seed is a secret key)
    print(f"best {result.best_params}, test accuracy {accuracy(result.best_output, X_test, y_test):.3f}")
    print(f"certificate: {result.certificate}")
    print(f"the same run certified from the event directly: {ps.certify(ps.compose(PRIVACY, SCORE_NOISE), K, DELTA)}")
