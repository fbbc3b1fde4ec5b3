"""Peer accountants (dp-accounting, prv-accountant) on the same inputs as privselect, for cross-checks.

``parts`` is a list of ``(noise_multiplier, sampling_rate, steps)``: a composition of
Poisson-subsampled Gaussian mechanisms. Used by ``benchmarks/accounting.py`` and
``experiments/accountants.py``; the peers are imported lazily (the ``test`` extra).
"""

from __future__ import annotations

import privselect as ps

__all__ = ["DELTA", "DPSGD", "HETEROGENEOUS", "privselect_mechanism", "dp_accounting_pld", "run_dp_accounting_pld",
           "run_prv_accountant", "run_dp_accounting_rdp"]

DELTA = 1e-5
DPSGD = [(1.1, 256 / 60000, 14063)]
HETEROGENEOUS = [(1.1, 256 / 60000, 5000), (0.8, 0.01, 2000), (2.0, 0.05, 1000)]


def privselect_mechanism(parts):
    return ps.compose(*[ps.Gaussian(s).poisson_subsample(q).compose(t) for s, q, t in parts])


def dp_accounting_pld(parts, interval, pessimistic=True):
    """dp-accounting's composed PLD of ``parts`` (connect-the-dots when pessimistic)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = None
    for s, q, t in parts:
        one = pld.from_gaussian_mechanism(
            standard_deviation=s, sensitivity=1, sampling_prob=q,
            value_discretization_interval=interval, pessimistic_estimate=pessimistic,
            use_connect_dots=pessimistic,
        ).self_compose(t)
        total = one if total is None else total.compose(one)
    return total


def run_dp_accounting_pld(parts, interval, pessimistic=True):
    return dp_accounting_pld(parts, interval, pessimistic).get_epsilon_for_delta(DELTA)


def run_prv_accountant(parts):
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    acc = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=s, sampling_probability=q) for s, q, _ in parts],
        max_self_compositions=[t for *_, t in parts], eps_error=0.01, delta_error=DELTA / 1000,
    )
    return acc.compute_epsilon(DELTA, num_self_compositions=[t for *_, t in parts])


def run_dp_accounting_rdp(parts):
    import dp_accounting

    acc = dp_accounting.rdp.RdpAccountant()
    for s, q, t in parts:
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), t)
    return acc.get_epsilon(DELTA)
