"""Exact enumeration: the law of the released (candidate, score) of an adaptive search on D and D'.

Three candidates; a run of candidate l reports a binary score, 1 with probability p_l(D), by randomized
response (pure eps0-DP). The adaptive rule picks the next candidate's law from the previous run's
(candidate, score) through the library's own projection and integer law (so it is inside the declared
density ratio by construction). A dynamic programme over (best so far, last run) gives the exact law of
the released best (ties go to the earliest run, as in the engine) after j runs; mixing over
K ~ Geometric(mean) truncated where the tail is below 1e-15 (the tail only lowers the hockey stick by at
most e^eps * tail, which the check subtracts) gives the released law. The exact delta(eps) at the
certificate's eps must be at most delta, in both directions.
"""

import math

import numpy as np
import pytest

import privselect as ps
from privselect.selection.adaptive import DensityRatio
from privselect.tuning.adaptive import DensityRatioError, IntegerLaw, project_density

PRIOR = np.full(3, 1 / 3)


def released_law(p_one, rule, k_pmf):
    """Exact law of (best candidate, best score), flattened as 2 * l + y."""
    n = len(p_one)
    states = 2 * n
    outcome = np.zeros((n + 1, states))  # row n: the first run (prior); row l... via rule below
    transition = np.zeros((states, states))  # last (l, y) -> next (l', y')
    first = rule(None, None)
    for l in range(n):
        outcome[n, 2 * l + 1], outcome[n, 2 * l] = first[l] * p_one[l], first[l] * (1 - p_one[l])
    for l in range(n):
        for y in (0, 1):
            law = rule(l, y)
            transition[2 * l + y, 1::2] = law * p_one
            transition[2 * l + y, 0::2] = law * (1 - p_one)
    best_after = np.zeros((states, states))  # best_after[best, new] = index of the new best
    for b in range(states):
        for new in range(states):
            best_after[b, new] = new if new % 2 > b % 2 else b
    state = np.diag(outcome[n])  # state[best, last]
    released = np.zeros(states)
    for pk in k_pmf:
        released += pk * state.sum(axis=1)
        flow = state @ transition  # [best, new]
        nxt = np.zeros_like(state)
        np.add.at(nxt, (best_after.astype(int), np.broadcast_to(np.arange(states), (states, states))), flow)
        state = nxt
    return released


def hockey(p, q, eps):
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def exact_epsilon(p, q, delta, tail=0.0):
    lo, hi = 0.0, 60.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if max(hockey(p, q, mid), hockey(q, p, mid)) - math.exp(mid) * tail > delta:
            lo = mid
        else:
            hi = mid
    return hi


def projected_rule(ratio, favour_after_success=True):
    """The library's sampler as a deterministic rule: all weight on one candidate, projected and rounded."""
    r = DensityRatio(*ratio)

    def rule(last, score):
        if last is None:
            return PRIOR
        g = np.full(3, 1e-9)
        target = last if (score == 1) == favour_after_success else (last + 1) % 3
        g[target] = 1.0
        return IntegerLaw.from_density(project_density(g, PRIOR, r), PRIOR, r).probabilities

    return rule


def rr(eps0, flip):
    hi = math.exp(eps0) / (1 + math.exp(eps0))
    return 1 - hi if flip else hi


def neighbours(eps0):
    """D and D': candidate 0 and 1 answer opposite randomized responses, candidate 2 is a fair coin."""
    return (np.array([rr(eps0, False), rr(eps0, True), 0.5]), np.array([rr(eps0, True), rr(eps0, False), 0.5]))


def k_law(mean):
    k = ps.Geometric(mean=mean)
    kmax = math.ceil(math.log(1e-16) / math.log(1 - k.gamma))
    pmf = k.pmf(np.arange(1, kmax + 1))
    return k, pmf, max(1.0 - pmf.sum(), 0.0)


def test_the_enumeration_matches_the_closed_form_of_iid_selection():
    p_d, _ = neighbours(1.0)
    k, pmf, _ = k_law(4)
    law = released_law(p_d, lambda last, score: PRIOR, pmf)
    q = PRIOR @ p_d
    phi = k.pgf(1 - q)
    expected = np.empty(6)
    expected[1::2] = PRIOR * p_d / q * (1 - phi)  # first success is candidate l
    expected[0::2] = PRIOR * (1 - p_d) / (1 - q) * phi  # all failed: the first run is released
    np.testing.assert_allclose(law, expected, rtol=1e-10)


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("mean", [2.0, 5.0])
@pytest.mark.parametrize("ratio", [(1.5, 0.6), (2.0, 0.75), (4.0, 0.25)])
@pytest.mark.parametrize("stick", [True, False])
def test_exact_epsilon_of_adaptive_rules_is_below_the_certificate(eps0, mean, ratio, stick):
    p_d, p_d2 = neighbours(eps0)
    k, pmf, tail = k_law(mean)
    rule = projected_rule(ratio, stick)
    p, q = released_law(p_d, rule, pmf), released_law(p_d2, rule, pmf)
    assert p.sum() == pytest.approx(1.0, abs=1e-12) and q.sum() == pytest.approx(1.0, abs=1e-12)
    for delta in (1e-1, 1e-2, 1e-3, 1e-4, 1e-6):
        eps = ps.certify_adaptive(ps.RandomizedResponse(rr(eps0, False)), k, delta, density_ratio=ratio).epsilon
        assert max(hockey(p, q, eps), hockey(q, p, eps)) - math.exp(eps) * tail <= delta
        assert exact_epsilon(p, q, delta, tail) <= eps


def test_the_enumeration_catches_a_bound_that_ignores_the_selection():
    # a deterministic schedule 0, 1, 2, 2, ...: the released candidate tells when the first 1 came, so the
    # released pair leaks more than one run: a "certificate" of eps0 (one run) is caught
    eps0 = 1.0
    p_d, p_d2 = np.full(3, rr(eps0, False)), np.full(3, rr(eps0, True))
    _, pmf, tail = k_law(10)

    def schedule(last, score):
        law = np.zeros(3)
        law[0 if last is None else min(last + 1, 2)] = 1.0
        return law

    p, q = released_law(p_d, schedule, pmf), released_law(p_d2, schedule, pmf)
    assert exact_epsilon(p, q, 1e-4, tail) > 1.5 * eps0
    assert max(hockey(p, q, eps0), hockey(q, p, eps0)) > 1e-4


def test_a_rule_that_breaks_the_bounds_is_refused_by_the_sampler():
    schedule = np.array([1.0, 0.0, 0.0])  # the schedule above as one step's law: ratio 3 and 0 to the prior
    with pytest.raises(DensityRatioError):
        IntegerLaw(np.rint(schedule * 2**40).astype(np.int64), PRIOR, DensityRatio(2.0, 0.75))
    # through the projection it is pulled back inside
    law = IntegerLaw.from_density(project_density(schedule, PRIOR, DensityRatio(2.0, 0.75)), PRIOR,
                                  DensityRatio(2.0, 0.75))
    assert law.effective_ratio().max() <= 2.0 and law.effective_ratio().min() >= 0.75
