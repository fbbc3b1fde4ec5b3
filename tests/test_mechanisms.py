"""Mechanism descriptions: validation, algebra, and the privacy-loss laws behind them."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate

import privselect as ps
from privselect.accounting.plrv import composed_losses, privacy_losses
from privselect.mechanisms import NeighbouringRelation


def hockey_stick(loss, eps):
    """delta(eps) = P[L=inf] + int_eps^inf e^{eps-t} P[L > t] dt (Gopi et al. 2021, Thm 3.3)."""
    lo, hi = loss.support
    upper = hi if math.isfinite(hi) else eps + 80.0
    if upper <= eps:
        return loss.inf_mass
    points = [p for p in (lo, hi) if math.isfinite(p) and eps < p < upper]
    val, _ = integrate.quad(lambda t: math.exp(eps - t) * float(loss.sf(np.array(t))), eps, upper,
                            points=points or None, limit=400, epsabs=1e-14, epsrel=1e-12)
    return loss.inf_mass + val


@pytest.mark.parametrize(
    "factory, message",
    [
        (lambda: ps.Gaussian(0), "noise_multiplier"),
        (lambda: ps.Gaussian(-1.0), "noise_multiplier"),
        (lambda: ps.Gaussian(float("nan")), "noise_multiplier"),
        (lambda: ps.Gaussian(float("inf")), "noise_multiplier"),
        (lambda: ps.Gaussian(1.0, sensitivity=0), "sensitivity"),
        (lambda: ps.Laplace(0), "scale"),
        (lambda: ps.RandomizedResponse(1.0), "p"),
        (lambda: ps.RandomizedResponse(0.0), "p"),
        (lambda: ps.PureDP(-0.1), "epsilon"),
        (lambda: ps.ApproxDP(1.0, 1.0), "delta"),
        (lambda: ps.ApproxDP(1.0, -1e-9), "delta"),
        (lambda: ps.Gaussian(1.0).poisson_subsample(0), "rate"),
        (lambda: ps.Gaussian(1.0).poisson_subsample(1.5), "rate"),
        (lambda: ps.Gaussian(1.0).poisson_subsample(float("nan")), "rate"),
        (lambda: ps.Gaussian(1.0).compose(0), "k"),
        (lambda: ps.Gaussian(1.0).compose(2.5), "k"),
        (lambda: ps.Gaussian(1.0).compose(-3), "k"),
    ],
)
def test_bad_parameters_raise_value_error_naming_the_parameter(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


def test_bad_types_raise_type_error():
    with pytest.raises(TypeError, match="noise_multiplier"):
        ps.Gaussian("1.0")
    with pytest.raises(TypeError, match="k"):
        ps.Gaussian(1.0).compose(True)
    with pytest.raises(TypeError):
        ps.compose(ps.Gaussian(1.0), "laplace")


def test_mechanisms_are_frozen_and_hashable():
    g = ps.Gaussian(1.1)
    with pytest.raises(AttributeError):
        g.noise_multiplier = 2.0
    assert hash(g) == hash(ps.Gaussian(1.1)) and g == ps.Gaussian(1.1)


def test_composition_merges_equal_parts_and_counts():
    g, lap = ps.Gaussian(2.0), ps.Laplace(1.0)
    c = ps.compose(g, lap, g.compose(3), lap)
    assert dict(c.parts) == {g: 4, lap: 2}
    assert c.compose(10).total_count == 60
    assert ps.compose(g.compose(2), lap) == ps.compose(lap, g, g)


def test_subsampling_refuses_composites_and_nesting():
    with pytest.raises(ValueError, match="subsample each step"):
        ps.Gaussian(1.0).compose(3).poisson_subsample(0.1)
    with pytest.raises(ValueError, match="PoissonSubsampled"):
        ps.Gaussian(1.0).poisson_subsample(0.1).poisson_subsample(0.1)


def test_asymmetry_flags():
    assert ps.Gaussian(1.0).is_symmetric
    assert not ps.Gaussian(1.0).poisson_subsample(0.1).is_symmetric
    assert ps.Gaussian(1.0).poisson_subsample(1.0).is_symmetric
    losses = privacy_losses(ps.Gaussian(1.0).poisson_subsample(0.1))
    assert not losses.is_symmetric


# -- privacy-loss laws against closed forms (accounting-cf.md §3, §5) ------------------

@pytest.mark.parametrize("eps, expected", [(-1, 0.6788179748866), (0, 0.382924922548), (0.5, 0.2384217081349),
                                           (1, 0.1269367375066), (2, 0.02092363582111), (3, 0.001537185369401)])
def test_gaussian_loss_law_reproduces_exact_profile(eps, expected):
    loss = privacy_losses(ps.Gaussian(1.0)).remove
    assert hockey_stick(loss, eps) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("eps, expected", [(0, 0.393469340287), (0.5, 0.221199216929), (0.9, 0.048770575499)])
def test_laplace_loss_law_reproduces_exact_profile(eps, expected):
    loss = privacy_losses(ps.Laplace(1.0)).remove
    assert hockey_stick(loss, eps) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    "alpha, remove, add",
    [(0.5, 0.5, 0.527464), (0.8, 0.270679, 0.305497), (1.5, 0.095305, 0.027464), (3.0, 0.023177, 0.0),
     (6.0, 0.004096, 0.0)],
)
def test_subsampled_gaussian_directions(alpha, remove, add):
    """Zhu, Dong, Wang 2022 Fig. 4 setting (sigma=1, rate=0.5): values of accounting-cf.md §1.3."""
    losses = privacy_losses(ps.Gaussian(1.0).poisson_subsample(0.5))
    eps = math.log(alpha)
    assert hockey_stick(losses.remove, eps) == pytest.approx(remove, abs=2e-6)
    assert hockey_stick(losses.add, eps) == pytest.approx(add, abs=2e-6)


def test_randomized_response_and_approx_dp_laws():
    p = 0.52
    rr = privacy_losses(ps.RandomizedResponse(p)).remove
    # single step: delta(eps) = p - e^eps (1 - p) for 0 <= eps <= log(p/(1-p))
    assert hockey_stick(rr, 0.05) == pytest.approx(p - math.exp(0.05) * (1 - p), abs=1e-12)
    adp = privacy_losses(ps.ApproxDP(1.0, 1e-3)).remove
    # Gopi et al. 2021 App. B.1: delta(eps') = delta + (1-delta)(e^eps - e^eps')_+ / (1 + e^eps)
    for e in (0.0, 0.5, 1.0, 2.0):
        expected = 1e-3 + (1 - 1e-3) * max(math.e - math.exp(e), 0) / (1 + math.e)
        assert hockey_stick(adp, e) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    sigma=st.floats(0.3, 20.0),
    rate=st.floats(1e-4, 0.99),
    x=st.lists(st.floats(-30.0, 30.0), min_size=1, max_size=8),
)
def test_subsampled_laws_are_distributions(sigma, rate, x):
    """cdf + sf = 1 in both directions and both measures; CDFs non-decreasing; Q = e^{-L} P."""
    losses = privacy_losses(ps.Gaussian(sigma).poisson_subsample(rate))
    grid = np.sort(np.asarray(x))
    for loss in (losses.remove, losses.add):
        np.testing.assert_allclose(loss.cdf(grid) + loss.sf(grid), 1.0, atol=1e-12)
        np.testing.assert_allclose(loss.cdf_secondary(grid) + loss.sf_secondary(grid), 1.0, atol=1e-12)
        assert np.all(np.diff(loss.cdf(grid)) >= -1e-15)
        # E_P[e^{-L}] = Q(finite) = 1 (Gopi et al. 2021, Thm 3.2 identity)
        assert float(np.real(np.exp(loss.log_phi(np.array([1j])))[0])) == pytest.approx(1.0, abs=1e-9)


def test_composed_losses_lists_each_distinct_component():
    g, lap = ps.Gaussian(2.0), ps.Laplace(1.0)
    parts = composed_losses(ps.compose(g.compose(5), lap))
    assert sorted(count for _, count in parts) == [1, 5]


def test_sensitivity_scales_the_noise_not_the_privacy():
    """Noise-multiplier semantics (ARCHITECTURE.md): noise std = noise_multiplier x sensitivity."""
    for sens in (0.25, 1.0, 7.0):
        g = ps.Gaussian(2.0, sensitivity=sens)
        assert ps.privacy_profile(g, accountant="exact").epsilon(1e-5) == pytest.approx(
            ps.gdp_profile(0.5).epsilon(1e-5), rel=1e-12)
        assert ps.privacy_profile(g, accountant="rdp").epsilon(1e-5) == pytest.approx(
            ps.privacy_profile(ps.Gaussian(2.0), accountant="rdp").epsilon(1e-5), rel=1e-12)
        lap = privacy_losses(ps.Laplace(4.0, sensitivity=sens)).remove
        assert lap.mu == pytest.approx(0.25)


# -- neighbouring relation and sampling without replacement (issue 14, item 5) --------------------

WOR_Q = 256 / 60000


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_sampling_without_replacement_trap_is_closed():
    """Issue 14 item 5: noise 1.1 x clip, replace-one sensitivity 2 x clip, 1000 steps, delta=1e-5.

    It used to certify 0.599 (the Poisson value, 8.6x too small). The privacy now comes from the
    replace-one description (Zhu, Dong, Wang 2022, Thm 11(2)), whichever way the user writes the
    clipping norm: 5.157 per the issue. Cross-check: ZDW Thm 11(2)'s pairs are the Poisson pairs of
    the replace-one base, i.e. dp-accounting's PLD of a Poisson-sampled Gaussian(0.55); dp-accounting's
    RDP bound for sampling without replacement (replace-one, Wang-Balle-Kasiviswanathan 2019) is looser.
    """
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    written = ps.Gaussian(1.1, sensitivity=2.0).sample_without_replacement(WOR_Q).compose(1000)
    clip_only = ps.Gaussian(1.1).sample_without_replacement(WOR_Q).compose(1000)
    poisson = ps.Gaussian(1.1).poisson_subsample(WOR_Q).compose(1000)
    lower, upper = ps.privacy_profile(written).epsilon_bounds(1e-5)
    assert ps.privacy_profile(clip_only).epsilon(1e-5) == pytest.approx(upper, rel=1e-9)
    assert upper == pytest.approx(5.157, rel=5e-3)
    assert upper > 8 * ps.privacy_profile(poisson).epsilon(1e-5)

    pld = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(dpa.PoissonSampledDpEvent(WOR_Q, dpa.GaussianDpEvent(0.55)), 1000)
    reference = pld.get_epsilon(1e-5)  # pessimistic PLD: an upper bound on the truth
    assert lower <= reference and upper == pytest.approx(reference, rel=5e-3)
    rdp = rdp_privacy_accountant.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    rdp.compose(dpa.SampledWithoutReplacementDpEvent(60000, 256, dpa.GaussianDpEvent(0.55)), 1000)
    assert upper <= rdp.get_epsilon(1e-5)


def test_replace_one_descriptions():
    g = ps.Gaussian(1.1, sensitivity=2.0)
    r = g.under_replace_one()
    assert (r.noise_multiplier, r.sensitivity, r.relation) == (0.55, 4.0, NeighbouringRelation.REPLACE_ONE)
    assert r.noise_multiplier * r.sensitivity == g.noise_multiplier * g.sensitivity  # same noise drawn
    assert r.under_replace_one() is r
    assert ps.Laplace(2.0).under_replace_one().epsilon == 1.0
    assert ps.PureDP(0.5).under_replace_one().epsilon == 1.0
    assert ps.RandomizedResponse(0.75).under_replace_one().epsilon == pytest.approx(2 * math.log(3), rel=1e-14)
    a = ps.ApproxDP(1.0, 1e-6).under_replace_one()
    assert a.epsilon == 2.0 and a.delta == pytest.approx((1 + math.e) * 1e-6, rel=1e-15)
    # a mechanism already described under replace-one neighbours is used as written
    native = ps.Gaussian(0.55, relation="replace_one").sample_without_replacement(WOR_Q)
    assert native.replace_one_base == ps.Gaussian(0.55, relation=NeighbouringRelation.REPLACE_ONE)


def test_relation_is_validated_recorded_and_not_mixed():
    with pytest.raises(ValueError, match="relation"):
        ps.Gaussian(1.0, relation="swap")
    with pytest.raises(ValueError, match="add/remove"):
        ps.Gaussian(1.0, relation="replace_one").poisson_subsample(0.1)
    with pytest.raises(ValueError, match="one neighbouring relation"):
        ps.compose(ps.Gaussian(1.0), ps.Gaussian(1.0, relation="replace_one"))
    prof = ps.privacy_profile(ps.Gaussian(2.0, relation="replace_one").compose(3))
    assert dict(prof.metadata)["neighbouring_relation"] == "replace_one"
    assert dict(ps.privacy_profile(ps.Gaussian(2.0).sample_without_replacement(0.1)).metadata)[
        "neighbouring_relation"] == "add_remove"


def test_repr_shows_what_the_user_wrote():
    assert repr(ps.Gaussian(1.1)) == "Gaussian(noise_multiplier=1.1)"
    assert repr(ps.Laplace(2.0, sensitivity=3.0)) == "Laplace(scale=2.0, sensitivity=3.0)"
