"""certify_adaptive: DP-HyPO Thm 1 / Thm 2 values, reductions, ordering against the i.i.d. certificate."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import privselect as ps
from privselect.accounting import rdp
from privselect.selection.adaptive import adaptive_rdp_curve

DPSGD = ps.dpsgd(noise_multiplier=1.1, sample_rate=256 / 60000, steps=2000)


@pytest.mark.parametrize("ratio, expected", [((1.5, 0.8), 4.10), ((2.0, 0.75), 5.19)])
def test_dpsgd_geometric_matches_independent_evaluation_of_theorem_1(ratio, expected):
    # issue 32's stated values: an independent evaluation of DP-HyPO Thm 1 (sigma 1.1, q 256/60000, 2000 steps)
    cert = ps.certify_adaptive(DPSGD, ps.Geometric(mean=10), 1e-5, density_ratio=ratio)
    assert cert.epsilon == pytest.approx(expected, abs=0.01)
    assert cert.bound == "adaptive-rdp" and "Thm 1" in cert.theorem


def test_theorem_1_by_hand_at_every_order():
    k = ps.Logarithmic(mean=5)
    orders = np.array([1.5, 2.0, 4.0, 8.0, 16.0])
    eps = rdp.rdp_curve(ps.Gaussian(2.0), orders)  # a mu^2 / 2 with mu = 1/2
    np.testing.assert_allclose(eps, orders / 8)
    C, c = 3.0, 0.6
    theta, gamma = k.eta, k.gamma
    hats = np.concatenate([(1 + theta) * ((1 - 1 / orders) * eps + math.log(1 / gamma) / orders),
                           [(1 + theta) * math.log(1 / gamma)]])
    by_hand = eps + hats.min() + (orders / (orders - 1) + 1 + theta) * math.log(C / c) + math.log(k.mean) / (orders - 1)
    by_hand = np.minimum.accumulate(by_hand[::-1])[::-1]
    np.testing.assert_allclose(adaptive_rdp_curve(ps.Gaussian(2.0), k, (C, c), orders=orders), by_hand, rtol=1e-12)


def test_without_adaptivity_it_is_papernot_steinke_exactly():
    k = ps.Geometric(mean=10)
    adaptive = ps.certify_adaptive(DPSGD, k, 1e-5, density_ratio=(1.0, 1.0))
    assert adaptive.epsilon == pytest.approx(ps.certify(DPSGD, k, 1e-5, bound="rdp").epsilon, rel=1e-12)


def test_pure_dp_runs_get_theorem_2():
    cert = ps.certify_adaptive(ps.PureDP(0.5), ps.Geometric(mean=10), 1e-6, density_ratio=(2.0, 0.75))
    assert cert.epsilon == pytest.approx(3 * (0.5 + math.log(2 / 0.75)), rel=1e-9)
    assert cert.bound == "adaptive-pure" and "Thm 2" in cert.theorem
    # eta = 0 (logarithmic): (2 + 0)(eps + log(C/c))
    cert = ps.certify_adaptive(ps.Laplace(2.0), ps.Logarithmic(mean=4), 1e-6, density_ratio=(1.5, 0.5))
    assert cert.alternatives["adaptive-pure"] == pytest.approx(2 * (0.5 + math.log(3.0)), rel=1e-9)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@pytest.mark.parametrize("k", [ps.Geometric(mean=10), ps.Geometric(mean=30), ps.Logarithmic(mean=10)])
def test_adaptive_certificate_is_never_below_the_iid_certificate_dpsgd(k):
    iid = ps.certify(DPSGD, k, 1e-5).epsilon
    previous = iid
    for ratio in [(1.0, 1.0), (1.5, 0.8), (2.0, 0.75), (4.0, 0.5)]:
        eps = ps.certify_adaptive(DPSGD, k, 1e-5, density_ratio=ratio).epsilon
        assert eps >= previous
        previous = eps


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
@settings(max_examples=25, deadline=None)
@given(noise=st.floats(0.5, 20.0), mean=st.floats(1.5, 50.0), big=st.floats(1.0, 8.0), small=st.floats(0.1, 1.0),
       eta=st.sampled_from([0.0, 1.0, 2.5]), pure=st.booleans())
def test_adaptive_certificate_is_never_below_the_iid_certificate(noise, mean, big, small, eta, pure):
    base = ps.PureDP(1.0 / noise) if pure else ps.Gaussian(noise)
    k = ps.TruncatedNegativeBinomial(eta=eta, mean=mean)
    adaptive = ps.certify_adaptive(base, k, 1e-6, density_ratio=(big, small)).epsilon
    assert adaptive >= ps.certify(base, k, 1e-6).epsilon
    assert adaptive >= ps.certify_adaptive(base, k, 1e-6, density_ratio=(1.0, 1.0)).epsilon


def test_privacy_that_depends_on_the_candidate_takes_the_supremum():
    k = ps.Geometric(mean=5)
    law = ps.space.privacy_law({"sigma": ps.space.Choice([1.0, 2.0, 4.0])}, lambda p: ps.Gaussian(p["sigma"]))
    worst = ps.certify_adaptive(ps.Gaussian(1.0), k, 1e-5, density_ratio=(2, 0.5))
    assert ps.certify_adaptive(law, k, 1e-5, density_ratio=(2, 0.5)).epsilon == pytest.approx(worst.epsilon)
    via_callable = ps.certify_adaptive(lambda p: ps.Gaussian(p["sigma"]), k, 1e-5, density_ratio=(2, 0.5),
                                       space={"sigma": ps.space.Choice([1.0, 2.0, 4.0])})
    assert via_callable.epsilon == pytest.approx(worst.epsilon)
    with pytest.raises(ValueError, match="space="):
        ps.certify_adaptive(lambda p: ps.Gaussian(p["sigma"]), k, 1e-5, density_ratio=(2, 0.5))
    with pytest.raises(ValueError, match="continuous"):
        ps.certify_adaptive(lambda p: ps.Gaussian(p["sigma"]), k, 1e-5, density_ratio=(2, 0.5),
                            space={"sigma": ps.space.Uniform(1.0, 2.0)})


@pytest.mark.parametrize("k", [ps.Poisson(mean=10), ps.Binomial(n=20, p=0.5)])
def test_laws_without_an_adaptive_theorem_are_refused_with_the_library_error(k):
    with pytest.raises(ps.CertificationError, match="truncated negative binomial"):
        ps.certify_adaptive(ps.Gaussian(2.0), k, 1e-5, density_ratio=(2, 0.5))


@pytest.mark.parametrize("ratio, word", [((0.9, 0.5), "C >= 1"), ((2.0, 1.5), "c <= 1"), ((2.0, 0.0), "c <= 1"),
                                         ((math.inf, 0.5), "C >= 1"), ((2.0,), "pair"), (2.0, "pair")])
def test_bad_density_ratio_names_the_parameter(ratio, word):
    with pytest.raises((ValueError, TypeError), match="density_ratio") as info:
        ps.certify_adaptive(ps.Gaussian(2.0), ps.Geometric(mean=5), 1e-5, density_ratio=ratio)
    assert word in str(info.value)


def test_approximate_dp_runs_without_rdp_are_certified_by_composition_alone():
    run, k = ps.ApproxDP(1.0, 1e-6), ps.Geometric(mean=5)
    cert = ps.certify_adaptive(run, k, 1e-5, density_ratio=(2, 0.5))
    assert cert.bound == "composition" and not math.isfinite(cert.alternatives["adaptive-rdp"])
    assert cert.epsilon == ps.certify(run, k, 1e-5, bound="mixture").epsilon


def test_without_any_bound_the_adaptive_certificate_is_refused():
    """Approximate-DP candidates that differ: no RDP curve, no pure epsilon, no single mechanism to compose."""
    with pytest.raises(ps.CertificationError, match="no adaptive bound"):
        ps.certify_adaptive([ps.ApproxDP(1.0, 1e-6), ps.ApproxDP(0.5, 1e-6)], ps.Geometric(mean=5), 1e-5,
                            density_ratio=(2, 0.5))


def test_the_smallest_valid_certificate_wins_with_the_others_listed():
    """DP-SGD (sigma 1.1, q 256/60000, 2000 steps), E[K] = 10, delta 1e-5 (docs/adaptive.md's table): at C/c = 4/0.5
    the composition of every run (6.22, PrivateStudy(adaptive=True)'s certificate) beats DP-HyPO Thm 1 (8.58); at
    1.5/0.8 Thm 1 (4.10) wins."""
    run = ps.dpsgd(noise_multiplier=1.1, sample_rate=256 / 60000, steps=2000)
    k = ps.Geometric(mean=10)
    wide = ps.certify_adaptive(run, k, 1e-5, density_ratio=(4, 0.5))
    composed = ps.certify(run, k, 1e-5, bound="mixture").epsilon
    assert wide.bound == "composition" and wide.epsilon == composed
    assert round(composed, 2) == 6.22 and round(wide.alternatives["adaptive-rdp"], 2) == 8.58
    narrow = ps.certify_adaptive(run, k, 1e-5, density_ratio=(1.5, 0.8))
    assert narrow.bound == "adaptive-rdp" and round(narrow.epsilon, 2) == 4.10
    assert narrow.alternatives["composition"] == composed
    assert narrow.profile is not None and narrow.profile.epsilon(1e-5) == pytest.approx(narrow.epsilon, rel=1e-9)


def test_certificate_round_trips_through_json():
    cert = ps.certify_adaptive(ps.Gaussian(3.0), ps.Geometric(mean=5), 1e-5, density_ratio=(2, 0.5))
    assert ps.Certificate.from_json(cert.to_json()) == cert


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_the_docs_table_is_what_the_code_gives():
    import re
    from pathlib import Path

    from experiments.adaptive_certificates import table

    text = (Path(__file__).resolve().parents[1] / "docs" / "adaptive.md").read_text(encoding="utf-8")
    for row in table():
        match = re.search(rf"^\| {row['E[K]']} \|(.*)\|$", text, re.MULTILINE)
        assert match, row["E[K]"]
        shown = [float(v) for v in match.group(1).split("|")]
        computed = [v for name, v in row.items() if name != "E[K]"]
        assert shown == pytest.approx(computed, abs=0.005 + 1e-9)
