"""The numbers a report prints are those of ``ps.risk`` on the same certificate, and the K-mixture's lower side,
which no risk number reads, is built only when a lower bound is asked for.

A subsampled DP-SGD run (PRV discretisation: the K-mixture from one discretisation, with a lazy lower side) keeps
each certificate under a second.
"""

from __future__ import annotations

import numpy as np
import pytest

import privselect as ps
from privselect.attack_risk import QUOTED_FPRS
from privselect.report import RISK_BASELINE, Report
from privselect.selection.bounds.mixture import k_mixture_profile

RUN = ps.dpsgd(noise_multiplier=1.0, sample_rate=0.01, steps=300)
K = ps.Geometric(mean=10)


@pytest.fixture(scope="module")
def cert() -> ps.Certificate:
    return ps.certify(RUN, K, 1e-5)


def _risk_numbers(r) -> list[float]:
    """What the report quotes, asked of a fresh ``ps.risk`` in the order a reader would ask."""
    quoted = [float(r.tpr(a)) for a in QUOTED_FPRS]
    return quoted + [float(r.advantage), float(r.attribute_inference(0.5)), float(r.reconstruction(RISK_BASELINE))]


def _report_numbers(report: Report, column: int) -> list[float]:
    return [row[column] for row in report.rows()]


@pytest.mark.parametrize("read_from_json", [False, True], ids=["in-memory", "from-json"])
def test_report_quotes_the_numbers_of_ps_risk_on_the_same_certificate(cert, read_from_json):
    reported = ps.Certificate.from_json(cert.to_json()) if read_from_json else cert
    report = Report.of(reported, dataset_size=60000)
    assert _report_numbers(report, 2) == _risk_numbers(ps.risk(reported))
    assert _report_numbers(report, 3) == _risk_numbers(ps.risk(RUN))  # one run: ps.risk of its mechanism


def test_report_text_prints_the_numbers_of_ps_risk(cert):
    text = Report.of(cert).text()
    for value in _risk_numbers(ps.risk(cert)):
        assert f"{value:.4g}" in text


def test_k_mixture_upper_delta_does_not_build_its_lower_side_and_the_bracket_holds_once_it_is_built():
    profile = k_mixture_profile(RUN, K, target_delta=1e-5, tail=1e-10)
    eps = np.linspace(0.0, 6.0, 25)
    upper = profile.delta(eps)
    brackets = [part for curve in profile.curves for _, part in curve.parts]
    assert brackets and not any(b.is_lower_built for b in brackets)
    lower, upper_again = profile.delta_bounds(eps)
    assert all(b.is_lower_built for b in brackets)
    assert np.array_equal(upper, upper_again)
    assert np.all(lower <= upper) and np.all(lower >= 0) and lower[0] > 0


def test_report_of_a_json_certificate_accounts_its_run_once_for_both_columns(cert, monkeypatch):
    from privselect import attack_risk, report

    loaded = ps.Certificate.from_json(cert.to_json())  # no profile in memory: the report rebuilds the run's
    built: list[object] = []
    for module in (attack_risk, report):
        original = module.privacy_profile

        def counted(mechanism, *args, _original=original, **kwargs):
            if mechanism == loaded.base:
                built.append(mechanism)
            return _original(mechanism, *args, **kwargs)
        monkeypatch.setattr(module, "privacy_profile", counted)
    shared = Report.of(loaded)
    assert len(built) == 1
    monkeypatch.undo()
    assert _report_numbers(shared, 2) == _risk_numbers(ps.risk(loaded))
    assert _report_numbers(shared, 3) == _risk_numbers(ps.risk(loaded.base))


def test_tpr_with_the_floor_computed_in_the_background_equals_tpr_with_it_computed_in_line(cert, monkeypatch):
    from privselect.attack_risk import DeferredProfile

    fprs = np.array(QUOTED_FPRS)
    started: list[DeferredProfile] = []
    original = DeferredProfile.prefetch_floor

    def recorded(self):
        started.append(self)
        original(self)
    monkeypatch.setattr(DeferredProfile, "prefetch_floor", recorded)
    prefetched = ps.risk(cert)
    in_background = prefetched.tpr(fprs)
    assert started == [prefetched.deferred]
    monkeypatch.setattr(DeferredProfile, "prefetch_floor", lambda self: None)
    assert np.array_equal(ps.risk(cert).tpr(fprs), in_background)
