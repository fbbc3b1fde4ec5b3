"""Peer accountants (dp-accounting, prv-accountant) on the same inputs as privselect, for cross-checks.

``parts`` is a list of ``(noise_multiplier, sampling_rate, steps)``: a composition of
Poisson-subsampled Gaussian mechanisms; `Part` describes one Gaussian or Laplace part of a
composition (the benchmarks' rows and the soundness sweep's cases) and `pld_of_parts` is
dp-accounting's PLD of such a composition. Used by ``benchmarks/`` and
``experiments/accountants.py``; the peers are imported lazily (the ``test`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass

import privselect as ps

__all__ = ["DELTA", "DPSGD", "HETEROGENEOUS", "Part", "pld_of_parts", "wor_rr_pmfs", "wor_rr_pld", "privselect_mechanism",
           "dp_accounting_pld", "run_dp_accounting_pld", "run_prv_accountant", "run_dp_accounting_rdp"]

DELTA = 1e-5
DPSGD = [(1.1, 256 / 60000, 14063)]
HETEROGENEOUS = [(1.1, 256 / 60000, 5000), (0.8, 0.01, 2000), (2.0, 0.05, 1000)]


def privselect_mechanism(parts):
    return ps.compose(*[ps.Gaussian(s).poisson_subsample(q).compose(t) for s, q, t in parts])


@dataclass(frozen=True)
class Part:
    """``steps`` compositions of a Gaussian (``noise``: noise multiplier) or Laplace (``noise``: scale)
    mechanism of sensitivity 1, Poisson-subsampled at ``rate`` (1: no subsampling)."""

    kind: str  # "gaussian" | "laplace"
    noise: float
    rate: float
    steps: int

    def mechanism(self) -> ps.Mechanism:
        base = ps.Gaussian(self.noise) if self.kind == "gaussian" else ps.Laplace(self.noise)
        return (base if self.rate == 1.0 else base.poisson_subsample(self.rate)).compose(self.steps)


def pld_of_parts(parts, interval: float, pessimistic: bool = True, tail_mass_truncation: float = 1e-15):
    """dp-accounting's composed PLD of the `Part`s (connect-the-dots when pessimistic; both directions).

    ``tail_mass_truncation`` is dp-accounting's per-composition truncation (its default 1e-15):
    pessimistic, the truncated mass goes to infinity (only adds to delta); optimistic, it is dropped.
    Below delta ~ 1e-12 give a value well below the query delta.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = None
    for p in parts:
        make = pld.from_gaussian_mechanism if p.kind == "gaussian" else pld.from_laplace_mechanism
        one = make(p.noise, sensitivity=1, sampling_prob=p.rate, value_discretization_interval=interval,
                   pessimistic_estimate=pessimistic, use_connect_dots=pessimistic)
        one = one.self_compose(p.steps, tail_mass_truncation=tail_mass_truncation)
        total = one if total is None else total.compose(one, tail_mass_truncation=tail_mass_truncation)
    return total


def wor_rr_pmfs(p: float, rate: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """One step of ``RandomizedResponse(p).sample_without_replacement(rate)``: the output pmfs (P', Q) on
    {0, 1}, P' = rate P + (1 - rate) Q (Zhu, Dong, Wang 2022, Thm 11(2)) for the replace-one pair
    (P, Q) of randomized response at p' = p^2 / (p^2 + (1-p)^2) (group privacy of size 2)."""
    pr = p * p / (p * p + (1 - p) ** 2)
    big = rate * pr + (1 - rate) * (1 - pr)
    return (big, 1 - big), (1 - pr, pr)


def wor_rr_pld(p: float, rate: float, steps: int, interval: float, pessimistic: bool = True,
               tail_mass_truncation: float = 1e-15):
    """dp-accounting's PLD of ``steps`` WOR-subsampled randomized-response steps, both directions
    (``from_two_probability_mass_functions`` on the pair of `wor_rr_pmfs`)."""
    import math

    from dp_accounting.pld import privacy_loss_distribution as pld

    upper, lower = wor_rr_pmfs(p, rate)
    one = pld.from_two_probability_mass_functions(
        {0: math.log(lower[0]), 1: math.log(lower[1])}, {0: math.log(upper[0]), 1: math.log(upper[1])},
        pessimistic_estimate=pessimistic, value_discretization_interval=interval, symmetric=False)
    return one.self_compose(steps, tail_mass_truncation=tail_mass_truncation)


def dp_accounting_pld(parts, interval, pessimistic=True):
    """dp-accounting's composed PLD of ``(noise_multiplier, rate, steps)`` Gaussian parts."""
    return pld_of_parts([Part("gaussian", s, q, t) for s, q, t in parts], interval, pessimistic)


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
