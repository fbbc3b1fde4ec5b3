"""privselect.plotting: the drawn data are the library's certified numbers."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import privselect as ps  # noqa: E402
from privselect.plotting import plot_certificates, plot_profile, plot_tradeoff  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def dpsgd_profile():
    return ps.privacy_profile(ps.Gaussian(1.1).poisson_subsample(0.01).compose(100), accountant="prv")  # fast


def gdp_tradeoff(alpha, mu):
    """G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu) (Dong, Roth, Su 2022, eq. (6))."""
    return stats.norm.cdf(stats.norm.ppf(1 - np.asarray(alpha)) - mu)


# -- plot_profile ------------------------------------------------------------------------


def test_profile_line_is_the_certified_upper_delta(dpsgd_profile):
    eps = np.linspace(0.0, 1.0, 21)  # above the PRV accountant's floor
    ax = plot_profile(dpsgd_profile, eps=eps, label="DP-SGD")
    (line,) = ax.lines
    np.testing.assert_array_equal(line.get_xdata(), eps)
    np.testing.assert_array_equal(line.get_ydata(), dpsgd_profile.delta(eps))
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["DP-SGD"]


def test_profile_stops_at_the_accountants_floor_and_marks_it(dpsgd_profile):
    """Below min_delta the PRV upper bound is its own error term (flat): not drawn as if real."""
    eps = np.linspace(0.0, 2.0, 41)
    prv = dpsgd_profile
    floor = prv.error_budget.min_delta
    upper = prv.delta(eps)
    assert floor > 0 and (upper <= floor).any() and (upper > floor).any()
    ax = plot_profile(prv, eps=eps, label="DP-SGD")
    line, floor_line = ax.lines
    drawn = np.asarray(line.get_ydata(), dtype=float)
    np.testing.assert_array_equal(drawn[upper > floor], upper[upper > floor])
    assert np.isnan(drawn[upper <= floor]).all()
    assert list(floor_line.get_ydata()) == [floor, floor] and "floor" in floor_line.get_label()
    exact = plot_profile(ps.gdp_profile(1.0), eps=eps)  # no floor: one line, nothing marked
    assert len(exact.lines) == 1


def test_profile_band_is_the_certified_bracket(dpsgd_profile):
    eps = np.linspace(0.0, 1.0, 11)
    lower, upper = dpsgd_profile.delta_bounds(eps)
    assert (lower > 0).all() and (lower < upper).all()
    ax = plot_profile(dpsgd_profile, eps=eps)
    (band,) = ax.collections
    vertices = band.get_paths()[0].vertices
    for e, lo, up in zip(eps, lower, upper):
        ys = vertices[np.isclose(vertices[:, 0], e), 1]
        assert np.isclose(ys, lo, rtol=1e-12, atol=0).any() and np.isclose(ys, up, rtol=1e-12, atol=0).any()
    assert len(plot_profile(dpsgd_profile, eps=eps, show_bounds=False).collections) == 0


def test_profile_without_lower_bound_draws_no_band(dpsgd_profile):
    selection = ps.selection_profile(dpsgd_profile, ps.Geometric(mean=10))  # lower side is 0
    ax = plot_profile(selection, eps=np.linspace(0.5, 2.0, 16))
    assert len(ax.collections) == 0


def test_profile_mapping_draws_one_labelled_line_each(dpsgd_profile):
    eps = np.linspace(0.0, 3.0, 31)
    profiles = {"one run": dpsgd_profile, "best of K": ps.selection_profile(dpsgd_profile, ps.Poisson(10))}
    ax = plot_profile(profiles, eps=eps)
    curves = [line for line in ax.lines if "floor" not in line.get_label()]
    assert [line.get_label() for line in curves] == list(profiles)
    for line, profile in zip(curves, profiles.values()):
        upper, drawn = profile.delta(eps), np.asarray(line.get_ydata(), dtype=float)
        above = upper > profile.error_budget.min_delta
        np.testing.assert_array_equal(drawn[above], upper[above])


def test_profile_default_grid_reaches_small_delta():
    profile = ps.gdp_profile(1.0)
    ax = plot_profile(profile)
    eps = ax.lines[0].get_xdata()
    assert eps[0] == 0.0 and eps[-1] >= float(profile.epsilon(1e-10))
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), profile.delta(eps))


def test_profile_draws_on_given_axes():
    fig, ax = plt.subplots()
    assert plot_profile(ps.gdp_profile(1.0), eps=[0.0, 1.0], ax=ax) is ax


def test_profile_rejects_bad_input():
    with pytest.raises(TypeError, match="PrivacyProfile"):
        plot_profile(ps.Gaussian(1.0))
    with pytest.raises(ValueError, match="label"):
        plot_profile({"a": ps.gdp_profile(1.0)}, label="b")
    with pytest.raises(ValueError, match="two points"):
        plot_profile(ps.gdp_profile(1.0), eps=[1.0])


# -- plot_tradeoff -----------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_tradeoff_of_gdp_matches_closed_form_from_below(mu):
    alpha = np.unique(np.concatenate([np.linspace(0, 1, 201), np.logspace(-6, 0, 61)]))
    ax = plot_tradeoff(ps.gdp_profile(mu), alpha=alpha, eps_grid=np.linspace(0, 30, 6001), scale="linear")
    line = ax.lines[0]
    np.testing.assert_array_equal(line.get_xdata(), alpha)
    beta, exact = np.asarray(line.get_ydata()), gdp_tradeoff(alpha, mu)
    assert (beta <= exact + 1e-12).all()  # conservative: never above the exact trade-off
    assert np.max(exact - beta) < 1e-3


def test_tradeoff_of_gaussian_via_prv_is_conservative_and_close():
    alpha = np.linspace(0, 1, 101)
    ax = plot_tradeoff(ps.privacy_profile(ps.Gaussian(1.0)), alpha=alpha, scale="linear")
    beta, exact = np.asarray(ax.lines[0].get_ydata()), gdp_tradeoff(alpha, 1.0)
    assert (beta <= exact + 1e-12).all()
    assert np.max(exact - beta) < 1e-2


def test_tradeoff_coarse_grid_is_lower(dpsgd_profile):
    alpha = np.linspace(0, 1, 51)
    fine = plot_tradeoff(dpsgd_profile, alpha=alpha, scale="linear").lines[0].get_ydata()
    coarse = plot_tradeoff(dpsgd_profile, alpha=alpha, eps_grid=np.linspace(0, 30, 31),
                           scale="linear").lines[0].get_ydata()
    assert (coarse <= fine + 1e-15).all() and (coarse < fine - 1e-4).any()


def test_tradeoff_line_is_profile_tradeoff_and_reference(dpsgd_profile):
    ax = plot_tradeoff({"DP-SGD": dpsgd_profile}, scale="linear")
    line, reference = ax.lines
    assert line.get_label() == "DP-SGD"
    np.testing.assert_array_equal(line.get_ydata(), dpsgd_profile.tradeoff(line.get_xdata()))
    np.testing.assert_array_equal(reference.get_ydata(), 1.0 - reference.get_xdata())
    assert len(plot_tradeoff(dpsgd_profile, show_reference=False).lines) == 1


def test_tradeoff_log_scale_draws_the_power_of_the_best_test(dpsgd_profile):
    """Default: power 1 - beta against alpha on log axes, so a selection's curve does not lie on the axes."""
    ax = plot_tradeoff(dpsgd_profile)
    line, reference = ax.lines
    alpha = np.asarray(line.get_xdata())
    assert ax.get_xscale() == ax.get_yscale() == "log" and (alpha > 0).all() and alpha.min() <= 1e-6
    np.testing.assert_array_equal(line.get_ydata(), 1.0 - dpsgd_profile.tradeoff(alpha))
    np.testing.assert_array_equal(reference.get_ydata(), alpha)
    # power <= e^eps alpha + delta(eps) for every eps (the profile's own guarantee)
    eps = np.linspace(0, 5, 51)
    bound = np.min(np.exp(eps)[:, None] * alpha[None, :] + dpsgd_profile.delta(eps)[:, None], axis=0)
    assert (np.asarray(line.get_ydata()) <= bound * (1 + 1e-9) + 1e-15).all()
    with pytest.raises(ValueError, match="scale"):
        plot_tradeoff(dpsgd_profile, scale="symlog")


def test_tradeoff_rejects_alpha_outside_unit_interval():
    with pytest.raises(ValueError, match="alpha"):
        plot_tradeoff(ps.gdp_profile(1.0), alpha=[0.5, 1.5])


# -- plot_certificates -------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificates():
    return {
        "Gaussian, geometric K": ps.certify(ps.Gaussian(4.0), ps.Geometric(mean=30), 1e-6),
        "DP-SGD, Poisson K": ps.certify(ps.Gaussian(1.1).poisson_subsample(0.01).compose(100), ps.Poisson(10), 1e-6,
                                        accountant="prv"),
    }


def test_certificate_bars_are_the_alternatives(certificates):
    cert = certificates["Gaussian, geometric K"]
    assert set(cert.alternatives) == {"profile", "rdp"}
    ax = plot_certificates(cert)
    heights = {c.get_label(): [bar.get_height() for bar in c] for c in ax.containers}
    assert heights == {name: [value] for name, value in cert.alternatives.items()}
    assert [t.get_text() for t in ax.get_xticklabels()] == list(cert.alternatives)
    chosen = [c.get_label() for c in ax.containers for bar in c if bar.get_hatch() == "//"]
    assert chosen == [cert.bound]
    assert cert.theorem in ax.get_title()


def test_certificate_bars_draw_on_axes_inside_a_subfigure(certificates):
    """The wrapped title measures the root figure: axes in a SubFigure (which has no size of its own) work."""
    cert = certificates["Gaussian, geometric K"]
    figure = plt.figure(figsize=(4, 3))
    ax = figure.subfigures(1, 2)[0].subplots()
    assert plot_certificates(cert, ax=ax) is ax
    assert cert.theorem in ax.get_title().replace("\n", " ")
    plt.close(figure)


def test_certificate_groups(certificates):
    ax = plot_certificates(certificates)
    for container in ax.containers:
        family = container.get_label()
        assert [bar.get_height() for bar in container] == [c.alternatives[family] for c in certificates.values()]
        for bar, cert in zip(container, certificates.values()):
            assert (bar.get_hatch() == "//") == (cert.bound == family)
    # the mapping's keys, wrapped so that neighbouring labels do not collide
    assert [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()] == list(certificates)
    # A plain sequence is labelled by the distribution of K.
    ax = plot_certificates(list(certificates.values()))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Geometric\nE[K]=30", "Poisson\nE[K]=10"]


def test_certificates_reject_bad_input():
    with pytest.raises(TypeError, match="Certificate"):
        plot_certificates([1.0])
    with pytest.raises(ValueError, match="empty"):
        plot_certificates([])


# -- optional dependency -----------------------------------------------------------------


def test_missing_matplotlib_raises_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    for call in (lambda: plot_profile(ps.gdp_profile(1.0)), lambda: plot_tradeoff(ps.gdp_profile(1.0))):
        with pytest.raises(ImportError, match=r'pip install "privselect\[plot\]"'):
            call()


def test_module_imports_without_matplotlib():
    code = textwrap.dedent("""
        import sys
        sys.modules["matplotlib"] = None
        import privselect.plotting as plotting
        import privselect as ps
        try:
            plotting.plot_certificates(ps.certify(ps.Gaussian(4.0), ps.Geometric(mean=30), 1e-6))
        except ImportError as exc:
            assert 'pip install "privselect[plot]"' in str(exc), exc
        else:
            raise AssertionError("no ImportError")
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plot_certificates_title_fits_the_figure_even_for_a_long_theorem():
    import dataclasses

    cert = ps.certify(ps.Gaussian(2.0), ps.Geometric(mean=10), 1e-6)
    long = dataclasses.replace(cert, theorem="KRW Cor. 6.2 on the averaged profile of a hyperparameter mixture, "
                                             "with the searched base epsilon and its proven error terms")
    for c in (cert, long):
        ax = plot_certificates(c)
        fig = ax.figure
        fig.canvas.draw()
        title = ax.title.get_window_extent(fig.canvas.get_renderer())
        assert title.x0 >= 0 and title.x1 <= fig.bbox.x1 and title.y1 <= fig.bbox.y1
        assert not title.overlaps(ax.get_window_extent())  # above the axes, not on the bars or legend
        assert c.theorem.split()[-1] in ax.get_title()
        plt.close(fig)
