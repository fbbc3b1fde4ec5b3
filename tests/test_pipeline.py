"""Pipeline certificates (selection layer): subsampled tuning, final runs, the RDP route."""

import math

import numpy as np
import pytest

import privselect as ps
from privselect.accounting import rdp
from privselect.selection.bounds.rdp import selection_rdp_curve
from privselect.selection.pipeline import PIPELINE_ORDERS, pipeline_rdp_epsilon, poisson_subsampled_rdp

RUN = ps.Gaussian(1.1).poisson_subsample(256 / 60000).compose(3000)
K = ps.Geometric(mean=10)
PRV = {"accountant": "prv"}  # one accountant keeps these tests fast; the default ("auto") is tested elsewhere


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_subsampled_tuning_is_cheaper_and_monotone_in_the_rate():
    eps = [ps.certify_pipeline(RUN, K, 1e-5, final=RUN, tuning_rate=r, **PRV).epsilon for r in (0.1, 0.5, 1.0)]
    final_alone = ps.privacy_profile(RUN).epsilon(1e-5)
    assert final_alone < eps[0] < eps[1] < eps[2]


def test_subsampled_selection_against_amplified_pure_dp():
    """A pure eps0-DP base: the selection is (3 eps0)-DP (KRW Cor. 5.3, eta = 1); subsampling it at
    rate r gives at most log(1 + r (e^{3 eps0} - 1)) (amplification of pure DP, both directions)."""
    eps0, r = 0.3, 0.2
    cert = ps.certify_pipeline(ps.PureDP(eps0), K, 1e-9, tuning_rate=r)
    amplified = math.log1p(r * math.expm1(3 * eps0))
    assert cert.epsilon <= amplified * 1.01 + 1e-3
    assert cert.epsilon >= math.log1p(r * math.expm1(eps0))  # at least one run's amplified eps


def test_zhu_wang_bound_for_the_subsampled_gaussian_is_above_the_exact_rdp():
    """Zhu-Wang Thm 6 is an upper bound: compare with the exact subsampled-Gaussian RDP (Mironov et al.)."""
    sigma, rate = 2.0, 0.05
    bound = poisson_subsampled_rdp(rdp.rdp_curve(ps.Gaussian(sigma), PIPELINE_ORDERS), PIPELINE_ORDERS, rate)
    exact = rdp.rdp_curve(ps.Gaussian(sigma).poisson_subsample(rate), PIPELINE_ORDERS)
    assert np.all(bound >= exact * (1 - 1e-9))
    assert bound[0] <= 2 * exact[0]  # and not vacuous at small orders
    assert np.all(bound <= rdp.rdp_curve(ps.Gaussian(sigma), PIPELINE_ORDERS) + 1e-12)


def test_rdp_route_adds_the_final_run():
    sel = float(rdp.epsilon_from_rdp(PIPELINE_ORDERS, selection_rdp_curve(RUN, K, PIPELINE_ORDERS), 1e-5))
    with_final = pipeline_rdp_epsilon(RUN, K, 1e-5, final=RUN)
    assert sel < with_final
    # composing in RDP beats adding the two (eps, delta/2) guarantees
    half = float(rdp.epsilon_from_rdp(PIPELINE_ORDERS, selection_rdp_curve(RUN, K, PIPELINE_ORDERS), 5e-6))
    assert with_final < half + float(rdp.rdp_epsilon(RUN, 5e-6))


def test_bad_input():
    with pytest.raises(ValueError, match="tuning_rate"):
        ps.certify_pipeline(RUN, K, 1e-5, tuning_rate=0.0)
    with pytest.raises(TypeError, match="final"):
        ps.certify_pipeline(RUN, K, 1e-5, final="model")
    with pytest.raises(TypeError, match="k must be"):
        ps.certify_pipeline(RUN, 10, 1e-5)


def test_split_losses_against_enumeration():
    """The mixture pair (r P1 x Q2 + (1-r) Q1 x P2, Q1 x Q2) of two small discrete pairs, enumerated."""
    from privselect.accounting.dominating import DiscreteLoss, split_losses
    from privselect.accounting.profile import discrete_profile

    p1, q1 = np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.1, 0.3, 0.4, 0.2])
    p2, q2 = np.array([0.05, 0.6, 0.35]), np.array([0.3, 0.3, 0.4])
    rate, mesh = 0.3, 1e-3

    def loss(p, q):
        both = (p > 0) & (q > 0)
        return DiscreteLoss(np.log(p[both] / q[both]), p[both], q[both], inf_mass=float(p[q == 0].sum()),
                            neg_inf_mass=float(q[p == 0].sum()))

    losses = split_losses(loss(p1, q1), loss(p2, q2), rate, mesh)
    mix = (rate * np.outer(p1, q2) + (1 - rate) * np.outer(q1, p2)).ravel()
    exact_remove, exact_add = discrete_profile(mix, np.outer(q1, q2).ravel()).curves
    eps = np.linspace(-2, 3, 201)
    for ours, exact in ((losses.remove, exact_remove), (losses.add, exact_add)):
        truth = exact.delta_bounds(eps)[1]
        got = ours.delta(eps)
        assert np.all(got >= truth - 1e-15)
        assert np.all(got <= truth + mesh)  # rounding the loss up by < mesh moves delta by < mesh


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_complement_final_run_is_certified_and_amplified():
    """Final run on the complement: cheaper than on the full data, never below the selection on the subsample."""
    full = ps.certify_pipeline(RUN, K, 1e-5, final=RUN, tuning_rate=0.2, **PRV)
    complement = ps.certify_pipeline(RUN, K, 1e-5, final=RUN, tuning_rate=0.2, final_data="complement", **PRV)
    tuning_only = ps.certify_pipeline(RUN, K, 1e-5, tuning_rate=0.2, **PRV)
    assert tuning_only.epsilon <= complement.epsilon < full.epsilon
    assert "complement" in complement.notes[0] and "rdp" not in complement.alternatives
    with pytest.raises(ValueError, match="complement"):
        ps.certify_pipeline(RUN, K, 1e-5, final=RUN, final_data="complement")


def test_pipeline_certificate_round_trips_and_its_selection_composes_again():
    """A saved certificate restores its base mechanism and K: its selection profile is a mechanism again."""
    from privselect.selection.bounds import selection_profile

    base = ps.Gaussian(2.0).poisson_subsample(0.01).compose(300)
    cert = ps.certify_pipeline(base, K, 1e-5, final=base, **PRV)
    restored = ps.Certificate.from_json(cert.to_json())
    assert restored.epsilon == cert.epsilon and restored.base == base
    again = ps.ProfileMechanism(selection_profile(restored.base, restored.k, **PRV))
    two = ps.privacy_profile(ps.compose(again, again), **PRV).epsilon(1e-5)
    one = ps.certify(base, K, 1e-5, **PRV).epsilon
    assert one < two < 2 * one
