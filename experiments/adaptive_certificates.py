"""The adaptive-search certificate table of docs/adaptive.md: DP-SGD runs (sigma 1.1, q 256/60000, 2000 steps),
K ~ Geometric(mean), delta 1e-5: i.i.d. (ps.certify), composition (every run and K released: the bound behind
PrivateStudy(adaptive=True)), and DP-HyPO (ps.certify_adaptive) at three density ratios.

    python -m experiments.adaptive_certificates
"""

from __future__ import annotations

import privselect as ps

RATIOS = ((1.5, 0.8), (2.0, 0.75), (4.0, 0.5))
MEANS = (10, 30)


def table(delta: float = 1e-5) -> list[dict]:
    run = ps.dpsgd(noise_multiplier=1.1, sample_rate=256 / 60000, steps=2000)
    rows = []
    for mean in MEANS:
        k = ps.Geometric(mean=mean)
        row = {"E[K]": mean, "iid": ps.certify(run, k, delta).epsilon,
               "composition": ps.certify(run, k, delta, bound="mixture").epsilon}
        for big, small in RATIOS:
            row[f"{big:g}/{small:g}"] = ps.certify_adaptive(run, k, delta, density_ratio=(big, small)).epsilon
        rows.append(row)
    return rows


def main() -> None:
    rows = table()
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.values()) + " |")


if __name__ == "__main__":
    main()
