"""Matplotlib figures of privacy profiles, trade-off curves and certificates (the ``plot`` extra).

Three views of the same guarantee:

- [`plot_profile`][privselect.plotting.plot_profile]: the privacy profile eps -> delta(eps) (Balle, Barthe, Gaboardi 2018),
  the certified upper bound as a line and, where the accountant gives one, the certified
  bracket ``lower <= delta <= upper`` as a shaded band.
- [`plot_tradeoff`][privselect.plotting.plot_tradeoff]: the f-DP trade-off curve beta(alpha) implied by the profile
  (Dong, Roth, Su 2022), a certified lower bound on the type II error of any membership test.
- [`plot_certificates`][privselect.plotting.plot_certificates]: the epsilon of every bound family a [`Certificate`][privselect.selection.certify.Certificate]
  computed (privacy profile, RDP, ...), with the one it chose highlighted.

matplotlib is imported only when a function is called, so ``import privselect.plotting``
works without it. Every function draws on ``ax`` (or a new figure's axes), returns the
axes, and neither prints nor shows anything.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from . import _validation as check
from .accounting.profile import CertificationError, PrivacyProfile
from .selection.certify import Certificate

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from matplotlib.axes import Axes

__all__ = ["plot_profile", "plot_tradeoff", "plot_certificates", "k_label"]

_INSTALL_HINT = 'privselect.plotting needs matplotlib; install it with: pip install "privselect[plot]"'


def _pyplot():
    """matplotlib.pyplot, imported on first use; ImportError with the install hint if missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return plt


def _axes(ax: Axes | None) -> Axes:
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots()
    return ax


def _labelled(name: str, items: Any, single: type, label: str | None) -> list[tuple[str | None, Any]]:
    """[(label, item)] from one item or a mapping label -> item."""
    if isinstance(items, single):
        return [(label, items)]
    if isinstance(items, Mapping):
        if label is not None:
            raise ValueError(f"label is only for a single {single.__name__}; a mapping's keys are its labels")
        if not items:
            raise ValueError(f"{name} must not be empty")
        for key, value in items.items():
            if not isinstance(value, single):
                raise TypeError(f"{name}[{key!r}] must be a {single.__name__}, got {type(value).__name__}")
        return [(str(key), value) for key, value in items.items()]
    raise TypeError(f"{name} must be a {single.__name__} or a mapping label -> {single.__name__}, "
                    f"got {type(items).__name__}")


def _tex_number(x: float) -> str:
    """1e-06 -> 10^{-6}, 1.416e-08 -> 1.4 \\times 10^{-8} (mathtext); numbers in [1e-3, 1e4) as %.3g."""
    exponent = math.log10(x) if x > 0 else math.nan
    if math.isfinite(exponent) and abs(exponent - round(exponent)) < 1e-12:
        return f"10^{{{int(round(exponent))}}}"
    if not math.isfinite(exponent) or -3 <= exponent < 4:
        return f"{x:.3g}"
    mantissa, power = f"{x:.1e}".split("e")
    return f"{mantissa} \\times 10^{{{int(power)}}}"


def _default_eps_grid(profiles: Sequence[PrivacyProfile], points: int = 400) -> np.ndarray:
    """0 to 1.25 x the largest eps at which some profile reaches delta = 1e-10 (or its floor)."""
    ends = []
    for profile in profiles:
        target = max(1e-10, 10.0 * profile.error_budget.min_delta)
        try:
            end = float(profile.epsilon(min(target, 0.5)))
        except (CertificationError, ValueError):
            continue
        if math.isfinite(end):
            ends.append(end)
    end = 1.25 * max(ends) if ends else 10.0
    return np.linspace(0.0, float(np.clip(end, 0.5, 60.0)), points)


def plot_profile(profile_or_profiles: PrivacyProfile | Mapping[str, PrivacyProfile], *, eps: ArrayLike | None = None,
                 ax: Axes | None = None, label: str | None = None, show_bounds: bool = True) -> Axes:
    """Plot the privacy profile delta(eps) on a log delta axis.

    The profile of a mechanism is eps -> delta(eps), the smallest delta with the mechanism
    (eps, delta)-DP (Balle, Barthe, Gaboardi 2018); for add/remove neighbours it is the
    maximum over both directions. The line is the certified upper bound ``profile.delta``;
    the shaded band is the certified bracket ``profile.delta_bounds`` (lower, upper), drawn
    where the lower side is informative (positive). Points where delta is 0 do not appear on
    the log axis.

    An accountant certifies delta only down to its floor ``profile.error_budget.min_delta``
    (below it the upper bound is its own error term, and would draw as a flat line that reads
    as real behaviour). The line stops at the floor, which is drawn as a dotted horizontal
    line in the same colour; use an accountant with a lower floor (``"cf"``, or the exact
    profile where one exists) to see the tail.

    Parameters
    ----------
    profile_or_profiles : PrivacyProfile or Mapping[str, PrivacyProfile]
        One profile, or several keyed by legend label.
    eps : array_like, optional
        The eps grid. Default: 400 points from 0 to 1.25 times the largest eps at which a
        profile certifies delta = 1e-10 (or ten times its floating-point floor).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; default a new figure's axes.
    label : str, optional
        Legend label of a single profile (a mapping's keys are its labels).
    show_bounds : bool
        Shade the certified bracket between the lower and upper bounds.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: one line per profile, whose y data is ``profile.delta(eps)``.
    """
    items = _labelled("profile_or_profiles", profile_or_profiles, PrivacyProfile, label)
    grid = _default_eps_grid([p for _, p in items]) if eps is None else check.real_array("eps", eps).reshape(-1)
    if grid.size < 2:
        raise ValueError("eps must hold at least two points")
    ax = _axes(ax)
    for name, profile in items:
        lower, upper = profile.delta_bounds(grid)
        floor = float(profile.error_budget.min_delta)
        above = upper > floor  # at or below the floor the upper bound is the accountant's error term
        (line,) = ax.plot(grid, np.where(above, upper, np.nan), label=name)
        if show_bounds and (lower > 0).any() and (lower < upper).any():
            ax.fill_between(grid, lower, upper, where=(lower > 0) & above, color=line.get_color(), alpha=0.25,
                            linewidth=0)
        if floor > 0 and not above.all():
            ax.axhline(floor, color=line.get_color(), linestyle=(0, (1, 2)), linewidth=1.0,
                       label=rf"floor ${_tex_number(floor)}$" + (f" ({name})" if name else " (accountant)"))
    ax.set_yscale("log")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel(r"$\delta(\varepsilon)$ (certified upper bound)")
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=7, loc="upper right")
    return ax


def plot_tradeoff(profile_or_profiles: PrivacyProfile | Mapping[str, PrivacyProfile], *,
                  alpha: ArrayLike | None = None, eps_grid: ArrayLike | None = None, ax: Axes | None = None,
                  label: str | None = None, show_reference: bool = True, scale: str = "log") -> Axes:
    """Plot the f-DP trade-off curve (type I error alpha vs type II error beta) of a profile.

    The standard profile -> trade-off conversion (Dong, Roth, Su 2022, Prop. 2.12;
    Zhu, Dong, Wang 2022): a mechanism that is (eps, delta(eps))-DP for every eps >= 0, in
    both neighbouring directions, is f-DP with

        f(alpha) = sup_{eps >= 0} max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha)),

    computed by ``profile.tradeoff``. The supremum is taken over a finite eps grid and with
    the certified upper delta; both can only make f smaller. A smaller f is a weaker claim
    (f-DP implies f'-DP for every f' <= f), so the plotted curve lies on or below the exact
    trade-off: it is conservative, never over-states privacy. A finer ``eps_grid`` makes it
    tighter. Higher curves are more private; beta = 1 - alpha is perfect privacy.

    Parameters
    ----------
    profile_or_profiles : PrivacyProfile or Mapping[str, PrivacyProfile]
        One profile, or several keyed by legend label.
    alpha : array_like, optional
        Type I errors in [0, 1]. Default: 401 evenly spaced points plus a log-spaced set
        from 1e-6 to resolve the steep start of the curve.
    eps_grid : array_like, optional
        The eps >= 0 over which the supremum is taken (``PrivacyProfile.tradeoff``'s
        default, 3001 points on [0, 30], when omitted).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; default a new figure's axes.
    label : str, optional
        Legend label of a single profile (a mapping's keys are its labels).
    show_reference : bool
        Draw the perfect-privacy line beta = 1 - alpha.
    scale : {"log", "linear"}
        ``"log"`` (default): the power ``1 - beta(alpha)`` of the best membership test against
        alpha, both on log axes (alpha > 0 only). The curve of a selection over many runs drops
        to beta ~ 0 within a tiny alpha, so on linear axes it lies on the axes; on log axes
        the distance above the diagonal (perfect privacy) is the privacy lost, at every level.
        ``"linear"``: beta against alpha on the unit square, with equal aspect.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: one line per profile, whose y data is ``profile.tradeoff(alpha)``
        (``"linear"``) or ``1 - profile.tradeoff(alpha)`` (``"log"``).
    """
    if scale not in ("log", "linear"):
        raise ValueError(f"scale must be 'log' or 'linear', got {scale!r}")
    items = _labelled("profile_or_profiles", profile_or_profiles, PrivacyProfile, label)
    if alpha is None:
        a = np.unique(np.concatenate([np.linspace(0.0, 1.0, 401), np.logspace(-6, 0, 121)]))
    else:
        a = check.real_array("alpha", alpha).reshape(-1)
        if ((a < 0) | (a > 1)).any():
            raise ValueError("alpha must lie in [0, 1]")
    ax = _axes(ax)
    log = scale == "log"
    if log:
        a = a[a > 0]  # alpha = 0 has no place on a log axis
    for name, profile in items:
        beta = profile.tradeoff(a, eps_grid=eps_grid)
        ax.plot(a, 1.0 - beta if log else beta, label=name)  # 1 - beta is exact in floats for beta >= 1/2
    if show_reference:
        ax.plot(a, a if log else 1.0 - a, color="0.5", linewidth=0.8, linestyle=":",
                label=r"perfect privacy $1 - \beta = \alpha$" if log else r"perfect privacy $\beta = 1 - \alpha$")
    ax.set_xlabel(r"type I error $\alpha$")
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(float(a.min()), 1.0)
        ax.set_ylim(float(a.min()), 1.5)
        ax.set_ylabel(r"power $1 - \beta(\alpha)$ (certified upper bound)")
    else:
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_aspect("equal")
        ax.set_ylabel(r"type II error $\beta(\alpha)$ (certified lower bound)")
    if show_reference or any(name is not None for name, _ in items):
        ax.legend(fontsize=8)
    return ax


def plot_certificates(certificates: Certificate | Sequence[Certificate] | Mapping[str, Certificate], *,
                      ax: Axes | None = None) -> Axes:
    """Bar chart of the epsilon each bound family certifies, with the chosen bound highlighted.

    A [`Certificate`][privselect.selection.certify.Certificate] holds in ``alternatives`` the epsilon of every family
    that applied (``"profile"``: Koskela, Redberg, Wang 2024; ``"rdp"``: Papernot, Steinke
    2022; ...) and chooses the smallest (``method``). Each bar's height is that epsilon; the
    chosen family's bar is hatched with a black edge. A family whose epsilon is infinite
    gets no bar and the text "inf".

    Parameters
    ----------
    certificates : Certificate, Sequence[Certificate] or Mapping[str, Certificate]
        One certificate (one bar per family), or several (bars grouped per certificate,
        labelled by the mapping's keys or by the distribution of K).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; default a new figure's axes.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: one bar container per family (``ax.containers``, labelled by the
        family), bars in certificate order.
    """
    items: list[tuple[str | None, Certificate]]
    if isinstance(certificates, Certificate):
        items = [(None, certificates)]
    elif isinstance(certificates, Mapping):
        items = _labelled("certificates", certificates, Certificate, None)
    elif isinstance(certificates, Sequence) and not isinstance(certificates, str):
        items = [(None, cert) for cert in certificates]
        for i, cert in enumerate(certificates):
            if not isinstance(cert, Certificate):
                raise TypeError(f"certificates[{i}] must be a Certificate, got {type(cert).__name__}")
    else:
        raise TypeError(f"certificates must be a Certificate, a sequence or a mapping of them, "
                        f"got {type(certificates).__name__}")
    if not items:
        raise ValueError("certificates must not be empty")
    families = list(dict.fromkeys(name for _, cert in items for name in cert.alternatives))
    single = len(items) == 1
    width = 0.6 if single else 0.8 / len(families)
    ax = _axes(ax)
    from matplotlib.patches import Patch

    for j, family in enumerate(families):
        rows = [(g, cert) for g, (_, cert) in enumerate(items) if family in cert.alternatives]
        x = np.array([float(j) if single else g - 0.4 + (j + 0.5) * width for g, _ in rows])
        heights = np.array([float(cert.alternatives[family]) for _, cert in rows])
        finite = np.isfinite(heights)
        bars = ax.bar(x, np.where(finite, heights, 0.0), width=width, label=family, color=f"C{j}", alpha=0.8)
        for bar, (_, cert), value, ok in zip(bars, rows, heights, finite):
            if cert.bound == family:
                bar.set_hatch("//")
                bar.set_edgecolor("black")
                bar.set_linewidth(1.5)
                bar.set_alpha(1.0)
            ax.annotate(f"{value:.3g}" if ok else "inf", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    if single:
        cert = items[0][1]
        ax.set_xticks(range(len(families)), families)
        _fitted_title(ax, f"chosen: {cert.bound} ({cert.theorem})", fontsize=9)
    else:
        names = [textwrap.fill(name, 14) if name is not None else k_label(cert.k) for name, cert in items]
        ax.set_xticks(range(len(items)), names, fontsize=8)
    handles, _ = ax.get_legend_handles_labels()
    if single:
        handles = []
    handles.append(Patch(facecolor="none", edgecolor="black", hatch="//", label="chosen (smallest valid)"))
    ax.set_ylim(0.0, ax.get_ylim()[1] * 1.3)  # headroom: the legend sits above the bars
    ax.legend(handles=handles, loc="upper center", ncols=len(handles), fontsize=8)
    deltas = {cert.delta for _, cert in items}
    where = f" at $\\delta={_tex_number(deltas.pop())}$" if len(deltas) == 1 else ""
    ax.set_ylabel(rf"certified $\varepsilon${where}")
    return ax


def _fitted_title(ax: Axes, text: str, fontsize: float) -> None:
    """Set ``text`` as the title, wrapped to the axes' width (a character is ~0.6 em wide), and make room."""
    figure = ax.figure  # the axes' parent: a Figure or a SubFigure
    inches = figure.figure  # the root Figure (a Figure's own figure is itself): the size in inches
    axes_inches = ax.get_position().width * inches.get_figwidth()
    chars = max(20, int(axes_inches * 72 / (0.6 * fontsize)))
    wrapped = textwrap.fill(text, chars)
    ax.set_title(wrapped, fontsize=fontsize)
    lines = wrapped.count("\n") + 1
    if lines > 1 and ax.get_subplotspec() is not None and not figure.get_constrained_layout():
        top = figure.subplotpars.top - (lines - 1) * 1.3 * fontsize / 72 / inches.get_figheight()
        figure.subplots_adjust(top=max(top, 0.5))


def k_label(k: Any) -> str:
    """A short two-line label for a law of K: its name (TNB with eta = 1 / 0 named geometric /
    logarithmic) and its mean, e.g. ``"Geometric\nE[K]=10"``."""
    name = type(k).__name__
    eta = getattr(k, "eta", None)
    if name == "TruncatedNegativeBinomial" and eta is not None:
        name = {1.0: "Geometric", 0.0: "Logarithmic"}.get(float(eta), f"TNB(eta={float(eta):.3g})")
    elif name == "Binomial":
        name = f"Binomial(n={k.n})"
    return f"{name}\nE[K]={float(k.mean):.3g}"
