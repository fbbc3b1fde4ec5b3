"""dp-accounting events privselect maps (checked against dp-accounting's own accountants) or refuses by name,
``ps.certify`` on an event, and the refusal of shuffling samplers (dpsgd, the CLI, the Opacus description)."""

import math
import subprocess
import sys

import pytest
from scipy import stats

import privselect as ps
from privselect.cli import main
from privselect.dp_events import TRUNCATION_TAIL, truncation_probability
from privselect.integrations import opacus as ps_opacus

dpa = pytest.importorskip("dp_accounting")
dp_event = dpa.dp_event
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

Q, N, STEPS, SIGMA = 256 / 60000, 60000, 2000, 1.1
DPSGD = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(SIGMA)), STEPS)


def _truncated(batch: int, steps: int = STEPS):
    step = dp_event.TruncatedSubsampledGaussianDpEvent(dataset_size=N, sampling_probability=Q,
                                                       truncated_batch_size=batch, noise_multiplier=SIGMA)
    return dp_event.SelfComposedDpEvent(step, steps)


def _pld_epsilon(event, delta=1e-5) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def test_truncation_probability_bounds_the_binomial_tail():
    for n, q, b in [(60000, Q, 300), (60000, Q, 360), (1000, 0.1, 150), (2000, 1e-5, 2), (50, 0.5, 50)]:
        exact = stats.binom.sf(b - 1, n, q)
        assert truncation_probability(n, q, b) >= exact
    assert truncation_probability(100, 0.5, 40) == 1.0 and truncation_probability(100, 0.5, 101) == 0.0


def test_untruncated_batches_are_poisson_sampling():
    assert ps.from_dp_event(_truncated(N + 1)) == ps.Gaussian(SIGMA).poisson_subsample(Q).compose(STEPS)


@pytest.mark.parametrize("batch", [340, 450])
def test_truncated_poisson_description_is_never_below_dp_accountings_pld(batch):
    """Truncated Poisson sampling: our description's epsilon is an upper bound on dp-accounting's own PLD
    answer for the event (Zhu, Dong, Wang domination); with rare truncation (b = 450, mean 256) within 0.5%."""
    ours = float(ps.privacy_profile(ps.from_dp_event(_truncated(batch))).epsilon(1e-5))
    peer = _pld_epsilon(_truncated(batch))
    assert ours >= peer * (1 - 1e-3)
    if batch == 450:
        assert ours == pytest.approx(peer, rel=5e-3)


def test_truncated_description_counts_truncated_steps_with_a_tail_below_its_budget():
    m = ps.from_dp_event(_truncated(340))
    parts = dict((type(part).__name__ + str(getattr(getattr(part, "base", None), "noise_multiplier", "")), count)
                 for part, count in m.parts)
    assert parts["PoissonSubsampled1.1"] + parts["PoissonSubsampled0.55"] == STEPS and parts["PoissonSubsampled0.55"] > 0
    (approx,) = [part for part, _ in m.parts if isinstance(part, ps.ApproxDP)]
    assert approx.epsilon == 0 and 0 < approx.delta <= TRUNCATION_TAIL


@pytest.mark.parametrize("event, reason", [
    (dp_event.SampledWithReplacementDpEvent(N, 256, dp_event.GaussianDpEvent(SIGMA)), "several times"),
    (dp_event.RepeatAndSelectDpEvent(DPSGD, 10, 1.0), "tuning procedure"),
    (dp_event.NonPrivateDpEvent(), "not differentially private"),
    (dp_event.NoOpDpEvent(), "NoOpDpEvent"),
])
def test_events_without_a_description_are_refused_by_name(event, reason):
    with pytest.raises(ValueError, match=f"no privselect description of {type(event).__name__}.*") as exc:
        ps.from_dp_event(event)
    assert reason in str(exc.value)
    with pytest.raises(ValueError, match=type(event).__name__):
        ps.certify(event, ps.Geometric(10), 1e-5)


def test_truncated_event_under_replace_one_is_refused():
    with pytest.raises(ValueError, match="add/remove"):
        ps.from_dp_event(_truncated(400), relation="replace_one")


def test_certify_takes_a_dp_event_as_its_description():
    direct = ps.certify(DPSGD, ps.Geometric(10), 1e-5)
    assert direct.epsilon == ps.certify(ps.from_dp_event(DPSGD), ps.Geometric(10), 1e-5).epsilon
    assert direct.base == ps.Gaussian(SIGMA).poisson_subsample(Q).compose(STEPS)


@pytest.mark.parametrize("shape, law", [(1.0, ps.Geometric(10)), (math.inf, ps.Poisson(10)),
                                        (0.5, ps.TruncatedNegativeBinomial(0.5, mean=10))])
def test_certified_tuning_is_at_most_dp_accountings_repeat_and_select(shape, law):
    """DP-SGD (sigma 1.1, q 256/60000, 2000 steps), best of K (mean 10), delta 1e-5: ps.certify on the event
    against dp-accounting's RDP accountant on RepeatAndSelectDpEvent (Papernot-Steinke 2022), same inputs."""
    accountant = rdp_privacy_accountant.RdpAccountant()
    accountant.compose(dp_event.RepeatAndSelectDpEvent(DPSGD, 10, shape))
    peer = accountant.get_epsilon(1e-5)
    ours = ps.certify(DPSGD, law, 1e-5).epsilon
    assert ours <= peer
    assert ours >= 0.5 * peer  # the same procedure: a gap this size would mean a wrong mapping


def test_import_privselect_and_certify_do_not_import_dp_accounting():
    code = ("import sys, privselect as ps; ps.certify(ps.Gaussian(2.0), ps.Geometric(10), 1e-5); "
            "print('dp_accounting' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("name", ["shuffle", "shuffled", "Shuffle"])
def test_dpsgd_refuses_shuffling_and_names_the_certified_samplers(name):
    with pytest.raises(ValueError, match="not certified") as exc:
        ps.dpsgd(noise_multiplier=1.1, sample_rate=Q, steps=10, sampling=name)
    for sampler in ("poisson", "without_replacement", "random_allocation"):
        assert sampler in str(exc.value)


def test_cli_refuses_shuffling_with_the_reason(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["certify", "--sampling", "shuffle", "--steps", "10"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--sampling" in err and "not certified" in err and "random_allocation" in err


def test_opacus_description_refuses_poisson_sampling_false():
    with pytest.raises(ValueError, match="poisson_sampling=False") as exc:
        ps_opacus.description(1.1, batch_size=256, dataset_size=60000, epochs=1, poisson_sampling=False)
    assert "not certified" in str(exc.value) and "random_allocation" in str(exc.value)
    default = ps_opacus.description(1.1, batch_size=256, dataset_size=60000, epochs=1)
    assert default == ps_opacus.description(1.1, batch_size=256, dataset_size=60000, epochs=1, poisson_sampling=True)
    assert default == ps.Gaussian(1.1).poisson_subsample(1 / 235).compose(235)
