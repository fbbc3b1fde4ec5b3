"""The vendored landscape of the adaptive-search experiment: a real, non-private sweep, computed once.

scikit-learn's MLPClassifier (one hidden layer of 32, Adam, 20 epochs) on the digits data (1,797 images,
8x8; fixed 80/20 train/validation split), over a 10 x 6 grid: learning_rate_init log-spaced in
[1e-4, 1] and the L2 penalty alpha log-spaced in [1e-6, 10]. Every cell is trained with 3 seeds; the
file keeps each seed's validation accuracy, so the run noise is measured, not assumed.

    python -m experiments.adaptive_landscape     (~2-5 min on a loaded core; writes data/adaptive/digits_mlp.csv)
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np

LEARNING_RATES = np.geomspace(1e-4, 1.0, 10)
ALPHAS = np.geomspace(1e-6, 10.0, 6)
SEEDS = (0, 1, 2)
PATH = Path(__file__).parent / "data" / "adaptive" / "digits_mlp.csv"


def sweep() -> list[dict]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    scaler = StandardScaler().fit(x_train)
    x_train, x_val = scaler.transform(x_train), scaler.transform(x_val)
    rows = []
    for lr in LEARNING_RATES:
        for alpha in ALPHAS:
            accuracies = []
            for seed in SEEDS:
                model = MLPClassifier((32,), learning_rate_init=lr, alpha=alpha, max_iter=20, random_state=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(x_train, y_train)
                accuracies.append(float(model.score(x_val, y_val)))
            rows.append({"learning_rate": float(lr), "alpha": float(alpha),
                         **{f"acc_seed{s}": a for s, a in zip(SEEDS, accuracies)}})
    return rows


def main() -> None:
    rows = sweep()
    PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(PATH, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {PATH} ({len(rows)} cells, n_validation = 360)")


if __name__ == "__main__":
    main()
