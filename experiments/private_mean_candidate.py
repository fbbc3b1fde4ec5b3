"""Does a "predict the private training mean" candidate help the default regressor on small sets?

Compares `SSPRidgeSelectionRegressor` with ``include_single_feature=False`` (before) and ``True``
(after: the one-feature fits, whose fit on the intercept column is the private training mean, join
the candidates at no extra privacy cost), against predicting the (non-private) training mean, as the
median test MSE on the original target scale over random 80/20 splits at eps = 1, delta = 1e-6.

Data are mapped into the public ball with public ranges (``load_table``'s maps): the feature and
target ranges below are declared constants (for diabetes, sklearn's documented value ranges rounded
outward), never read from a split.

    python experiments/private_mean_candidate.py [--splits 50]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes

from privselect.apps.ptr import SSPRidgeSelectionRegressor, load_table

HOUSES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "houses.csv"
HOUSES_BOUNDS = {"size_m2": (0, 250), "rooms": (0, 10), "age_years": (0, 100), "price_k": (0, 600)}
# diabetes (raw): age 19-79, sex 1-2, bmi 18-43, bp 62-133, s1 97-301, s2 41-243, s3 22-99, s4 2-9.1,
# s5 3.2-6.2, s6 58-124; target 25-346. Public ranges, rounded outward:
DIABETES_RANGES = np.array([(0, 100), (1, 2), (10, 50), (50, 150), (50, 350), (0, 300), (0, 120), (0, 10),
                            (3, 7), (50, 130)], dtype=float)
DIABETES_TARGET = (0.0, 400.0)


def diabetes():
    X, y = load_diabetes(return_X_y=True, scaled=False)
    lo, hi = DIABETES_RANGES[:, 0], DIABETES_RANGES[:, 1]
    Z = np.column_stack([(2 * X - (lo + hi)) / (hi - lo), np.ones(len(X))]) / np.sqrt(X.shape[1] + 1)
    a, b = DIABETES_TARGET
    return Z, (2 * y - (a + b)) / (b - a), lambda v: (a + b) / 2 + v * (b - a) / 2, {"x_bound": 1.0, "y_bound": 1.0}


def houses():
    table = load_table(HOUSES, target="price_k", header=True, bounds=HOUSES_BOUNDS)
    return table.X, table.y, table.target_to_original, table.bounds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    for name, load in (("diabetes", diabetes), ("houses (fixture)", houses)):
        X, y, to_original, bounds = load()
        n = len(y)
        rows = {"before (ridges + trivial)": [], "after (+ single-feature fits)": [], "training mean (non-private)": []}
        picked_mean = 0
        for split in range(args.splits):
            rng = np.random.default_rng(split)
            order = rng.permutation(n)
            tr, te = order[: int(0.8 * n)], order[int(0.8 * n):]
            y_te = to_original(y[te])
            for label, single in (("before (ridges + trivial)", False), ("after (+ single-feature fits)", True)):
                est = SSPRidgeSelectionRegressor(epsilon=args.epsilon, delta=1e-6, n_max=n, random_state=split,
                                                 include_single_feature=single, **bounds).fit(X[tr], y[tr])
                rows[label].append(float(np.mean((to_original(est.predict(X[te])) - y_te) ** 2)))
                if single and est.choice_ is not None and est.choice_ == 11 + X.shape[1] - 1:
                    picked_mean += 1
            rows["training mean (non-private)"].append(float(np.mean((to_original(y[tr]).mean() - y_te) ** 2)))
        print(f"{name}: n={n}, train={len(tr)}, d={X.shape[1]} (last column: intercept), eps={args.epsilon}, "
              f"{args.splits} splits")
        for label, values in rows.items():
            print(f"  {label:32s} median test MSE {np.median(values):10.4g}")
        print(f"  after: the intercept-column fit (private mean) chosen in {picked_mean}/{args.splits} splits")


if __name__ == "__main__":
    main()
