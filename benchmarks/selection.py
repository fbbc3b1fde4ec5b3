"""Selection benchmark: certify() from a built base profile, a sweep over m, vs dp-accounting RDP.

    python -m benchmarks.selection

Targets (issue 3): certify from a built profile < 20 ms; a sweep of 100 values of m < 0.5 s
(issue 25: the sweep answered by ``selection_epsilons``, all laws at once, one base-profile query;
the loop of 100 ``certify`` calls is timed beside it, and the two must agree).
dp-accounting's RdpAccountant with RepeatAndSelectDpEvent (Papernot-Steinke, RDP only) is timed
in the same run on the same base, with its epsilon beside ours.
K-mixture (issue 14, Build 8): 53 buckets (Geometric(mean=10), tail 1e-12), build plus eps at
three deltas, target < 0.5 s; one profile per bucket (the former computation) beside it.
"""

from __future__ import annotations

import numpy as np

import privselect as ps
from privselect.selection.bounds import k_mixture_profile, selection_epsilons
from tests.support.timing import best_of

SIGMA, RATE, STEPS, DELTA = 1.1, 256 / 60000, 14063, 1e-5


def main() -> None:
    base = ps.Gaussian(SIGMA).poisson_subsample(RATE).compose(STEPS)
    profile, build_s = best_of(lambda: ps.privacy_profile(base), repeat=1)
    cert, cert_s = best_of(lambda: ps.certify(profile, ps.Geometric(mean=10), DELTA, bound="profile"), repeat=5)
    means = np.geomspace(2, 300, 100)  # delta / m stays above the PRV floating-point floor
    loop, loop_s = best_of(
        lambda: [ps.certify(profile, ps.Geometric(mean=m), DELTA, bound="profile").epsilon for m in means], repeat=3)
    sweep, sweep_s = best_of(lambda: selection_epsilons(profile, [ps.Geometric(mean=m) for m in means], DELTA), repeat=3)
    print(f"base: DP-SGD sigma={SIGMA}, q={RATE:.5g}, T={STEPS}; PRV profile built in {build_s:.3f} s")
    print(f"certify (profile, geometric mean 10) from the built profile: {1e3 * cert_s:.2f} ms "
          f"(target < 20 ms), eps = {cert.epsilon:.4f}")
    print(f"sweep of 100 means ({means[0]:g}..{means[-1]:g}), selection_epsilons: {sweep_s:.3f} s (target < 0.5 s); "
          f"eps from {sweep[0]:.3f} to {sweep[-1]:.3f}; 100 certify calls: {loop_s:.3f} s; largest difference "
          f"{float(np.max(np.abs(np.asarray(loop) - sweep))):.2g}")
    mixture_rows()
    rdp_cert, rdp_s = best_of(lambda: ps.certify(base, ps.Geometric(mean=10), DELTA, bound="rdp"), repeat=3)
    try:
        import dp_accounting
        from dp_accounting.dp_event import RepeatAndSelectDpEvent

        def peer():
            acc = dp_accounting.rdp.RdpAccountant()
            event = dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(RATE, dp_accounting.GaussianDpEvent(SIGMA)), STEPS)
            acc.compose(RepeatAndSelectDpEvent(event, 10, 1))
            return acc.get_epsilon(DELTA)

        peer_eps, peer_s = best_of(peer, repeat=3)
        print(f"RDP (Papernot-Steinke): privselect {rdp_cert.epsilon:.4f} in {1e3 * rdp_s:.1f} ms; dp-accounting "
              f"{peer_eps:.4f} in {1e3 * peer_s:.1f} ms; privselect profile certificate / dp-accounting time: "
              f"{cert_s / peer_s:.2f}x")
    except ImportError:
        print("dp-accounting not installed: pip install 'privselect[test]' for the comparison")


def mixture_rows() -> None:
    """K-mixture certificate of 53 buckets from one description of the base run (and, for PRV,
    one profile per bucket beside it: what the certificate cost before)."""
    k, deltas = ps.Geometric(mean=10), np.array([1e-5, 1e-6, 1e-8])
    rows = (("Gaussian(4.0), exact", ps.Gaussian(4.0), False), ("Laplace(2.0), PRV", ps.Laplace(2.0), True),
            (f"DP-SGD sigma={SIGMA}, q={RATE:.3g}, T=1000, PRV", ps.Gaussian(SIGMA).poisson_subsample(RATE).compose(1000),
             False))
    for label, base, compare in rows:
        ours, ours_s = best_of(lambda: k_mixture_profile(base, k).epsilon(deltas), repeat=3)
        line = f"K-mixture, 53 buckets, {label}: {ours_s:.3f} s (target < 0.5 s), eps(1e-5, 1e-6, 1e-8) = {np.round(ours, 4)}"
        if compare:  # an accountant option selects one PRV build per bucket
            old, old_s = best_of(lambda: k_mixture_profile(base, k, accountant="prv", rel_eps_error=1.5e-3)
                                 .epsilon(deltas[:2]), repeat=1)  # its floor is ~1.5e-8
            line += (f"; one PRV profile per bucket: {old_s:.2f} s, eps(1e-5, 1e-6) = {np.round(old, 4)} "
                     f"({old_s / ours_s:.0f}x slower)")
        print(line)


if __name__ == "__main__":
    main()
