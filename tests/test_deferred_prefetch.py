"""``DeferredProfile.prefetch``: a report builds the K-mixture profile in the background while the other searches run;
the numbers are those of a build in the caller, and the floor is never computed for it."""

import threading

import numpy as np
import pytest
from scipy import stats

import privselect as ps
from privselect.attack_risk import DeferredProfile, Risk

FPRS = np.array([1e-4, 1e-3, 1e-2, 0.1, 0.5])


def gdp_tpr(alpha: np.ndarray, mu: float) -> np.ndarray:
    """1 - G_mu(alpha) = Phi(Phi^-1(alpha) + mu) (Dong, Roth, Su 2022, mu-GDP trade-off)."""
    return stats.norm.cdf(stats.norm.ppf(alpha) + mu)


def no_floor():
    raise AssertionError("the floor was computed for a profile being built")


def test_prefetched_profile_is_built_once_and_answers_as_a_profile_built_in_the_caller():
    calls, release = [], threading.Event()

    def build():
        calls.append(threading.current_thread().name)
        release.wait(5.0)  # still building while the query starts
        return ps.gdp_profile(1.0)

    deferred = DeferredProfile(build, no_floor, lambda built: "test")
    risk = Risk(profiles=(ps.gdp_profile(2.0),), deferred=deferred)
    deferred.prefetch()
    deferred.prefetch()  # once
    assert deferred.will_build
    release.set()
    got = risk.tpr(FPRS)
    assert calls == ["privselect-risk-build"]
    serial = Risk(profiles=(ps.gdp_profile(2.0), ps.gdp_profile(1.0))).tpr(FPRS)
    np.testing.assert_array_equal(got, serial)
    exact = gdp_tpr(FPRS, 1.0)  # the tighter profile's exact trade-off, which the search bounds from above
    assert np.all(got >= exact)
    np.testing.assert_allclose(got, exact, rtol=2e-3)
    assert len(risk.profiles) == 2


def test_a_background_build_that_raises_raises_again_in_the_caller():
    calls = []

    def build():
        calls.append(1)
        raise RuntimeError("cannot build")

    deferred = DeferredProfile(build, no_floor, lambda built: "test")
    deferred.prefetch()
    deferred._building.join(5.0)
    with pytest.raises(RuntimeError, match="cannot build"):
        deferred.build()
    assert len(calls) == 2
