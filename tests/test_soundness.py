"""Soundness sweep, small slice: certified epsilon never below a lower reference.

The full sweep is ``python -m benchmarks.soundness`` (docs/reliability.md). Here: random
subsampled-Gaussian compositions against dp-accounting's PLD (mesh 1e-3) in the regime where
its FFT composition is numerically reliable (delta >= 1e-8), random Gaussian compositions
against the exact GDP value over the full delta range, and exact one-step values by
quadrature at tiny delta (the CF accountant's regime).
"""

import math

import numpy as np
import pytest

import privselect as ps
from tests.support.peers import Part
from tests.support.soundness import Case, check_case, sample_cases, small_k_epsilon, summarise


@pytest.mark.parametrize("n, seed", [(4, 2025), pytest.param(12, 2024, marks=pytest.mark.slow)])  # 12: ~30 s
def test_pld_slice_has_no_violations(n, seed):
    cases = sample_cases(n, np.random.default_rng(seed), min_delta=1e-8)
    results = [check_case(c, interval=1e-3, adjudicate=False) for c in cases]
    summary = summarise(results)
    assert summary["mechanisms"] == n and summary["declined"] == 0 and summary["pld_errors"] == 0
    assert summary["violations"] == 0
    assert summary["bracket_disagreements"] == 0
    assert summary["pld_compared"] >= 2 * n - 4  # both directions of (almost) every case


def test_exact_gdp_slice_has_no_violations():
    """q = 1: the closed form is the truth, so both sides of privselect's bracket are checked."""
    rng = np.random.default_rng(7)
    cases = [Case(c.sigma, 1.0, c.k, c.delta) for c in sample_cases(40, rng)]
    results = [check_case(c, use_pld=False) for c in cases]
    summary = summarise(results)
    assert summary["violations"] == 0 and summary["bracket_disagreements"] == 0
    assert summary["exact_compared"] == 80
    assert summary["gap_to_exact_rel"]["max"] < 0.01  # and the certificate is tight


def test_directions_match_dp_accounting_convention():
    """privselect 'remove' is dp-accounting's REMOVE: H((1-q)Q + qP || Q); it dominates here."""
    r = check_case(Case(1.0, 0.01, 100, 1e-5), interval=1e-3, adjudicate=False)
    by = {d.direction: d for d in r.directions}
    assert by["remove"].certified > by["add"].certified
    assert by["remove"].pld_pessimistic > by["add"].pld_pessimistic
    for d in r.directions:
        assert d.pld_optimistic <= d.certified and d.lower <= d.pld_pessimistic


@pytest.mark.slow  # one-step CF at tiny delta: 5-45 s per case; the slow tier runs it
@pytest.mark.parametrize("sigma, q, delta", [(2.0, 0.01, 1e-10), (0.7, 0.3, 1e-12)])
def test_one_step_exact_quadrature_inside_bracket_at_tiny_delta(sigma, q, delta):
    """Below the PRV floor privselect certifies with CF; check it against exact quadrature (k = 1)."""
    case = Case(sigma, q, 1, delta)
    prof = ps.privacy_profile(case.mechanism(), accountant="cf")
    for curve in prof.curves:
        lower, upper = (float(v[0]) for v in curve.epsilon_bounds(np.array([delta])))
        exact = small_k_epsilon(case, curve.direction, upper)
        assert lower - 1e-9 <= exact <= upper + 1e-9


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_many_small_rate_steps_are_tight_at_tiny_delta():
    """Was an xfail: CF's certified truncation term dominated (1.346 against a truth of ~0.366).

    CF's bracket there is still wide (its Fourier envelope decays slowly for tiny rates), but the
    PRV accountant built for the query delta (long-double composition below the double floor)
    certifies it tightly, and so does the default ("auto" adds that PRV profile below its floor).
    """
    case = Case(0.886, 0.000178, 13410, 4.4e-11)
    prof = ps.privacy_profile(case.mechanism(), accountant="prv", target_delta=case.delta)
    lower, upper = prof.epsilon_bounds(case.delta)
    # dp-accounting 0.6.0 PLD (1e-4, pessimistic, remove direction): 0.366; prv_accountant agrees
    assert lower <= 0.366 <= upper * (1 + 1e-3)
    assert upper <= 1.01 * 0.366


def test_sweep_sandwich_decides_only_what_the_optimistic_pld_proves():
    """benchmarks/soundness.py skips the fine PLD where the coarse optimistic PLD's delta(x) proves the
    default within tolerance of every upper bound; here the truth is the closed form (mu = 1 GDP)."""
    from benchmarks.soundness import Query, _gap, _gap_threshold, _sandwiched, pld_distributions

    for value in (3.0, 2e-3, 5e-4):  # both branches of the relative-gap floor
        for tol in (0.005, 0.05):
            assert _gap(value, _gap_threshold(value, tol)) == pytest.approx(tol)
    delta = 1e-5
    query = Query((Part("gaussian", 2.0, 1.0, 4),), delta)
    (optimistic,) = pld_distributions(query, 1e-3, (False,))
    truth = float(ps.gaussian_epsilon(delta, 1.0))
    assert _sandwiched(optimistic, truth * 1.001, delta, 0.005)  # within 0.5% of the truth: decided
    assert not _sandwiched(optimistic, truth * 1.02, delta, 0.005)  # 2% above: must go to the fine PLD
    assert _sandwiched(optimistic, truth * 1.02, delta, 0.05)
    assert _sandwiched(optimistic, 4e-6, delta, 0.005)  # below 0.5% of the 1e-3 floor: any reference >= 0


def test_tilted_fft_reference_has_relative_precision_at_tiny_delta():
    """The sweep's independent adjudicator (tests/support/soundness.tilted_delta) against the mu-GDP closed
    form where delta ~ 1e-14, far below an untilted FFT's floor; and for a subsampled Gaussian against
    dp-accounting's PLD bracket at delta = 1e-6, where the PLD is reliable."""
    from tests.support.peers import pld_of_parts
    from tests.support.soundness import tilted_delta

    parts = [Part("gaussian", 2.0, 1.0, 10)]
    for eps in (3.0, 14.0):
        exact = float(ps.gaussian_delta(eps, math.sqrt(10) / 2))
        assert tilted_delta(parts, eps) == pytest.approx(exact, rel=1e-5)
    assert float(ps.gaussian_delta(14.0, math.sqrt(10) / 2)) < 1e-13
    parts = [Part("gaussian", 3.66, 0.171, 400)]
    optimistic, pessimistic = (pld_of_parts(parts, 1e-4, p).get_epsilon_for_delta(1e-6) for p in (False, True))
    assert tilted_delta(parts, pessimistic) <= 1e-6 * (1 + 1e-4)  # the PLD's upper eps: delta below 1e-6
    assert tilted_delta(parts, optimistic) >= 1e-6 * (1 - 1e-4)  # its lower eps: delta at least 1e-6
