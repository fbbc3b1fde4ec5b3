"""Seconds of ``ps.risk(cert)`` and of the report (``Report.of`` + text + HTML) on the README example (DP-SGD,
sigma 1.1, rate 256/60000, 14063 steps, K ~ Geometric(mean 10), delta 1e-5), wall and CPU, and the share of the
K-mixture profile (the tuning's curve that is tighter near eps = 0). No peer reports these; the ratio printed is
CPU over wall (about 2 where the two neighbouring directions run on two free cores).

    PYTHONPATH=. python benchmarks/report.py
"""

from __future__ import annotations

import time

import privselect as ps
from privselect.attack_risk import tuning_profiles
from privselect.report import Report


def _clock(call):
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    step = ps.Gaussian(noise_multiplier=1.1).poisson_subsample(256 / 60000)
    cert = ps.certify(step.compose(14063), ps.Geometric(mean=10), 1e-5)
    _, wall, cpu = _clock(lambda: tuning_profiles(cert))
    print(f"tuning profiles (K-mixture included) wall {wall:.2f} s  cpu {cpu:.2f} s  cpu/wall {cpu / wall:.2f}")
    _, wall, cpu = _clock(lambda: ps.risk(cert).tpr(1e-3))
    print(f"ps.risk(cert).tpr(1e-3)               wall {wall:.2f} s  cpu {cpu:.2f} s  cpu/wall {cpu / wall:.2f}")
    loaded = ps.Certificate.from_json(cert.to_json())  # as privselect report reads it: no profile in memory

    def report():
        built = Report.of(loaded, dataset_size=60000)
        return built.text(), built.html()

    _, wall, cpu = _clock(report)
    print(f"report of the JSON certificate         wall {wall:.2f} s  cpu {cpu:.2f} s  cpu/wall {cpu / wall:.2f}")


if __name__ == "__main__":
    main()
