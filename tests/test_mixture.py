"""K-mixture bound (K released / adaptive runs) against an exact sum for Gaussian bases."""

import numpy as np
import pytest

import privselect as ps
from privselect.selection.mixture import k_mixture_profile


@pytest.mark.parametrize("k_dist", [ps.Geometric(mean=5), ps.Poisson(4.0), ps.Binomial(20, 0.3)], ids=repr)
def test_mixture_bound_dominates_the_exact_mixture_and_is_close(k_dist):
    mu = 0.3
    ks = np.arange(0, 400)
    pk = k_dist.pmf(ks)
    eps = np.linspace(0.0, 4.0, 41)
    exact = sum(p * (ps.gaussian_delta(eps, mu * np.sqrt(k)) if k > 0 else np.maximum(-np.expm1(-0 * eps), 0))
                for p, k in zip(pk, ks))
    bound = k_mixture_profile(ps.Gaussian(1 / mu), k_dist, accountant="exact").delta(eps)
    assert np.all(bound >= exact - 1e-15)
    assert np.all(bound <= 1.3 * exact + 1e-10)  # buckets beyond k = 32 cost a little


def test_mixture_is_never_below_the_selection_certificate():
    base = ps.Gaussian(4.0)
    for k in (ps.Geometric(mean=10), ps.Logarithmic(mean=10)):
        sel = ps.certify(base, k, 1e-6, accountant="exact").epsilon
        mix = k_mixture_profile(base, k, accountant="exact").epsilon(1e-6)
        assert mix >= sel


def test_mixture_needs_a_mechanism():
    with pytest.raises(TypeError, match="Mechanism"):
        k_mixture_profile(ps.gdp_profile(1.0), ps.Geometric(mean=3))
