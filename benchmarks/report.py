"""Seconds of ``ps.risk(cert)`` + ``tpr(1e-3)`` and of the report (``Report.of`` + text + HTML) on the README example
(DP-SGD, sigma 1.1, rate 256/60000, 14063 steps, K ~ Geometric(mean 10), delta 1e-5), wall and CPU, median of
``REPEATS`` runs, and the cost of the K-mixture profile (the tuning's curve that is tighter near eps = 0).

``ps.risk`` defers the K-mixture profile: at FPR 1e-3 KRW's selection profile wins, a coarse K-mixture floor proves
it (about 0.2 s), and the K-mixture itself is never built. The report builds it (it plots it and quotes FPR 0.1 and
the advantage, where it wins). No peer reports these; cpu/wall is about 2 where the two neighbouring directions run
on two free cores.

    PYTHONPATH=. python benchmarks/report.py

Round of issue 43 (CPU seconds, median of 5, on a shared 2-core machine under load (load average about 4), main
then this branch, run alternately twice): the report 4.94 / 5.81 s -> 3.38 / 2.96 s, the K-mixture 2.71 / 3.14 s
-> 1.84 / 1.87 s, ``ps.risk(cert) + tpr(1e-3)`` 1.10 / 1.13 s -> 0.96 / 1.04 s. The K-mixture's lower side (a
second inverse FFT per direction) is built only when a lower bound is asked for, which no risk number and no
report does; the CF accountant's brackets are memoised per query array; a report read from JSON accounts its run
once for both columns; ``tpr`` computes the K-mixture's floor in a background thread while the selection profile
answers. Every number printed is unchanged (tests/test_report_numbers.py).

Next round (CPU seconds, median of 5, machine under load (load average 3 to 5), main then this branch, run
alternately twice): the report 3.60 / 3.66 and 5.11 / 3.43 s -> 2.97 / 2.80 and 3.33 / 2.95 s, the K-mixture
2.48 / 1.93 and 2.34 / 2.09 s -> 1.33 / 1.24 and 1.46 / 1.27 s, ``ps.risk(cert) + tpr(1e-3)`` (its code is
unchanged) 1.47 / 1.10 and 1.55 / 1.11 s -> 1.37 / 1.17 and 1.37 / 1.04 s. The K-mixture reads each side's block
sums straight from its spectrum's first few hundred entries (``selection.bounds.block_sums``, a small matrix
product, where an inverse FFT of 8.2e6 points took about 0.4 s per side) and finds that prefix from squared
magnitudes; a report asks ``Risk.summary`` for its numbers (one search over eps, where it ran three). What is left:
the K-mixture's forward FFT (8.2e6 points, about 0.45 s per direction) and the CF accountant's phi grids (about 40
per report, 25 ms each, mostly complex exponentials). The printed numbers are unchanged; the K-mixture's raw tpr at
0.1, advantage and attribute bounds grew by about 1.5e-11 relative (its new rounding bound).

Third round (CPU seconds, median of 5, machine under load (load average 2.7 to 3.9, cpu/wall often 0.6: another
worker on the second core), main then this branch, run alternately twice, twice): the report 2.37 / 1.97 and
2.16 / 2.58 s -> 1.36 / 1.32 and 1.82 / 2.03 s, the K-mixture 1.19 / 0.93 and 1.34 / 1.09 s -> 0.50 / 0.49 and
0.57 / 0.54 s, ``ps.risk(cert) + tpr(1e-3)`` 0.95 / 0.71 and 0.95 / 0.93 s -> 0.66 / 0.65 and 0.88 / 1.03 s; the
report alone (``Report.of`` + text + HTML, three alternations): 2.74 / 2.51 / 2.70 s -> 1.90 / 1.79 / 2.15 s. The
K-mixture no longer transforms its run on 8.2e6 points: a 5.6e5-point FFT and the run's Lipschitz constant prove
where the spectrum falls below the floor (about 580 entries), and those entries are summed directly
(``selection.bounds.spectrum_head``: 2 K sqrt(s) complex exponentials and small real products, about 0.04 s where
the FFT took 0.35 to 0.7 s, with a proven error below the FFT's own bound, which stays the one charged); its mixed
spectra hold only their live entries. The CF accountant's Fourier sums write cos and sin into one complex array
and build their outer factors from two small tables (1.5 to 2 times faster, within the rounding already charged).
Every number the report prints is unchanged, the CF values bitwise; the K-mixture's tpr at 0.1, advantage and
attribute bounds move by at most 8e-12 relative, either way (the spectrum head's own rounding, inside the
error bound charged). Still
above 1 s: the CF phi grids (43 per report, 17 eps-ranges per direction, 6 of them for the negative eps that KRW's
selection profile asks of the run) and their moment generating functions (323 quadrature rules), the HTML's
delta(eps) figure (241 eps up to 2 eps_cert: about 0.15 s).

Fourth round (CPU and wall seconds, median of 5, main then this branch, run alternately three times, twice, on a
machine under heavy load (load average 5 to 8 on 2 cores: cpu/wall about 0.66 throughout, no core free)): the report
0.87 / 0.82 / 0.87 s CPU (wall 1.32 / 1.22 / 1.32 s) -> 0.72 / 0.69 / 0.67 s CPU (wall 1.08 / 1.06 / 1.00 s), and
0.82 / 0.83 / 0.99 s CPU (wall 1.29 / 1.28 / 1.51 s) -> 0.68 / 0.67 / 0.66 s CPU (wall 1.00 / 1.00 / 0.95 s);
``ps.risk(cert) + tpr(1e-3)`` 0.41 / 0.43 / 0.42 s CPU (wall 0.64 / 0.73 / 0.64 s) -> 0.21 / 0.21 / 0.22 s CPU
(wall 0.31 / 0.32 / 0.37 s) (the other set's "before" was bimodal: 0.41 / 1.22 / 1.70 s). The CF grids of a
report: 43 -> 26. KRW's selection profile reads its base at eps < 0 from the positive side
(``accounting.profile.reflected_delta``: H_a(P || Q) = 1 - a + a H_{1/a}(Q || P), and a profile is a supremum over
a symmetric neighbouring relation), which the scans ask anyway (6 grids per direction fewer); the coarse eps scan
cuts each chunk where min(e^eps alpha, 1 - e^-eps) passes every alpha's best value so far and runs in chunks of 32
up to eps 6 (the run's scan ends at eps 2.1, the tuning's at 3.9; both went to 5.9); the delta(eps) figure stops
evaluating a curve once it is below the plotted floor (the true delta is non-increasing: the SVG is byte for byte
the same); the report builds the K-mixture in the background (``DeferredProfile.prefetch``) while the run's and the
selection profile's searches run on the CF accountant: no wall gain could be measured on this machine (cpu/wall 0.66
with and without it, both medians within noise of each other); on two free cores the K-mixture's 0.3 s can overlap
the CF searches (not measured here). Every number the report prints, its text and its HTML are unchanged (bitwise).
What is left: the CF Fourier sums of 26 grids (about 0.35 s) and the K-mixture (about 0.3 s).
"""

from __future__ import annotations

import statistics
import time

import privselect as ps
from privselect.attack_risk import tuning_profiles
from privselect.report import Report

REPEATS = 5


def _clock(call, repeats: int = REPEATS, setup=lambda: None) -> tuple[object, float, float]:
    """The last result, and the median wall and CPU seconds of ``repeats`` calls (each on a fresh ``setup()``,
    untimed, where given: no cache warmed by the previous call)."""
    walls, cpus = [], []
    out = None
    for _ in range(repeats):
        given = setup()
        wall, cpu = time.perf_counter(), time.process_time()
        out = call() if given is None else call(given)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return out, statistics.median(walls), statistics.median(cpus)


def _line(what: str, wall: float, cpu: float) -> None:
    print(f"{what:<46} wall {wall:.2f} s  cpu {cpu:.2f} s  cpu/wall {cpu / wall:.2f}  (median of {REPEATS})")


def main() -> None:
    step = ps.Gaussian(noise_multiplier=1.1).poisson_subsample(256 / 60000)

    def certificate():  # a fresh one per run, as in the README (the certificate's profile caches its answers)
        return ps.certify(step.compose(14063), ps.Geometric(mean=10), 1e-5)

    cert = certificate()
    _, wall, cpu = _clock(lambda: tuning_profiles(cert))
    _line("tuning profiles (K-mixture built)", wall, cpu)

    def query(fresh):
        r = ps.risk(fresh)
        return r, r.tpr(1e-3)

    (r, value), wall, cpu = _clock(query, setup=certificate)
    _line("ps.risk(cert) + tpr(1e-3)", wall, cpu)
    print(f"  tpr(1e-3) = {value!r}; K-mixture built: {r.deferred is not None and r.deferred.is_built}")
    loaded = ps.Certificate.from_json(cert.to_json())  # as privselect report reads it: no profile in memory

    def report():
        built = Report.of(loaded, dataset_size=60000)
        built.text(), built.html()
        return built

    built, wall, cpu = _clock(report)
    _line("report of the JSON certificate", wall, cpu)
    lower = [part.is_lower_built for curve in built.tuning.profiles[-1].curves for _, part in curve.parts
             if hasattr(part, "is_lower_built")]
    print(f"  K-mixture lower sides built by the report: {sum(lower)} of {len(lower)}")


if __name__ == "__main__":
    main()
