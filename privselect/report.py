"""What a certificate means to its reader: the guarantee in words, the attack risks, and a self-contained page.

[`report_text`][privselect.report.report_text] and [`report_html`][privselect.report.report_html] (also
``Certificate.report()`` and ``privselect report CERT.json [--html FILE]``) read a
[`Certificate`][privselect.selection.certify.Certificate] and the certified risk bounds of
[`privselect.risk`][privselect.attack_risk.risk]. The page has no external resource: its figures are inline SVG
drawn here (the trade-off curve with the quoted points marked, the privacy profile), its tables are HTML.
Nothing in a report comes from the data: a certificate depends on the declarations only.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .attack_risk import QUOTED_FPRS, Risk, risk
from .mechanisms import Mechanism

__all__ = ["RISK_BASELINE", "Report", "report_html", "report_text"]

#: The reconstruction baseline the report quotes (an attacker who, without the record, rebuilds it 1 in 1000).
RISK_BASELINE = 1e-3
#: Trade-off curve points of the page's figure (log-spaced FPR).
_CURVE_FPRS = np.logspace(-6, 0, 121)


def _one_in(x: float) -> str:
    """1e-3 -> '1 in 1,000'."""
    return f"1 in {round(1 / x):,}" if 0 < x < 1 else f"{x:g}"


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%" if x >= 1e-4 else f"{100 * x:.2e}%"


def _run_risk(cert: Any) -> Risk | None:
    """The risk of ONE run (for the comparison column), where the certificate knows its run."""
    if cert.run_profile is not None:
        return risk(cert.run_profile)
    if isinstance(cert.base, Mechanism):
        return risk(cert.base)
    return None


@dataclass(frozen=True)
class Report:
    """A certificate with its certified risks: the tuning's (``tuning``) and one run's (``run``, where known).

    Build it once with [`Report.of`][privselect.report.Report.of]; ``text()`` and ``html()`` render it.
    """

    cert: Any
    tuning: Risk
    run: Risk | None = None

    @classmethod
    def of(cls, cert: Any, *, with_run: bool = True) -> Report:
        """The risks of ``cert`` (``ps.risk``) and, with ``with_run``, of one of its runs."""
        if not all(hasattr(cert, name) for name in ("epsilon", "delta", "alternatives", "k", "bound", "theorem")):
            raise TypeError(f"cert must be a Certificate, got {type(cert).__name__}")
        return cls(cert, risk(cert), _run_risk(cert) if with_run else None)

    def text(self) -> str:
        """The guarantee in words and the table of certified risks."""
        return _text(self)

    def html(self) -> str:
        """A self-contained HTML page (inline SVG figures, no external resource)."""
        return _html(self)

    def released(self) -> str:
        if self.cert.bound == "mixture":
            return f"K ~ {self.cert.k!r} runs, all of them and K itself released"
        return f"the best of K ~ {self.cert.k!r} runs"

    def rows(self) -> list[tuple[str, str, float, float | None]]:
        """(attack, what, tuning bound, one-run bound)."""
        t, r = self.tuning, self.run
        out = []
        for a in QUOTED_FPRS:
            out.append(("membership", f"TPR at FPR {a:g}", float(t.tpr(a)), None if r is None else float(r.tpr(a))))
        out.append(("membership", "advantage (max TPR - FPR)", t.advantage, None if r is None else r.advantage))
        out.append(("attribute inference", "success guessing a secret bit, prior 1/2",
                    float(t.attribute_inference(0.5)), None if r is None else float(r.attribute_inference(0.5))))
        out.append(("reconstruction", f"success when the baseline is {_one_in(RISK_BASELINE)}",
                    float(t.reconstruction(RISK_BASELINE)),
                    None if r is None else float(r.reconstruction(RISK_BASELINE))))
        return out

    def sentences(self) -> list[str]:
        c, t = self.cert, self.tuning
        tpr = float(t.tpr(1e-3))
        out = [
            f"Releasing {self.released()} of {_describe(c.base)} is ({c.epsilon:.4g}, {c.delta:.3g})-differentially "
            f"private for {_relation(c.relation)} ({c.theorem})"
            + ("." if c.bound == "mixture" else "; K and the other runs are never released."),
            f"Membership: an attacker who wrongly accuses at most {_one_in(1e-3)} non-members catches at most "
            f"{_pct(tpr)} of the members, whatever the attack (at most {tpr / 1e-3:.3g} times the rate of a blind guess).",
            f"No attack's true-positive rate exceeds its false-positive rate by more than {t.advantage:.3g}.",
            f"Reconstruction: an attacker who would rebuild a record {_one_in(RISK_BASELINE)} times without it in the "
            f"data succeeds at most {_pct(float(t.reconstruction(RISK_BASELINE)))} of the time with it.",
            f"Attribute inference: a secret yes/no attribute held with even odds is guessed right at most "
            f"{_pct(float(t.attribute_inference(0.5)))} of the time.",
        ]
        if not t.certified:
            out.append("These numbers rest on an error ESTIMATE of the accountant, not a proven bound.")
        return out

    def public(self) -> list[tuple[str, str]]:
        c = self.cert
        items = [("one run", _describe(c.base)), ("neighbouring data sets", _relation(c.relation)),
                 ("K's law", f"{c.k!r}, drawn independently of the data")]
        if isinstance(c.base, Mechanism):
            items.append(("from the run's description", "noise multiplier, sampling rate and number of steps "
                          "(hence the data set size n they were computed from) are parameters, never read from data"))
        items += [("declared, not learnt", "label sets, feature and target bounds, and any constant used in "
                   "pre-processing are parameters of the run; the guarantee assumes they did not come from the data"),
                  ("target delta", f"{c.delta:.3g}"), ("accountant", c.accountant),
                  ("error budget", _budget(c)), ("privselect", c.version)]
        return items


def _describe(base) -> str:
    """DP-SGD in words where the run is one Poisson-subsampled Gaussian composed T times; else the repr."""
    if not isinstance(base, Mechanism):
        return str(base)
    parts = list(base.components())
    if len(parts) == 1:
        (step, count), = parts
        inner = getattr(step, "base", None)
        sigma = getattr(inner, "noise_multiplier", None)
        if sigma is not None and hasattr(step, "rate"):
            sampling = "Poisson" if type(step).__name__ == "PoissonSubsampled" else "without-replacement"
            return (f"noisy training (DP-SGD: noise multiplier {sigma:g}, {sampling} sampling rate {step.rate:.4g}, "
                    f"{count:,} steps)")
        if count > 1:
            return f"{step!r} composed {count:,} times"
    return repr(base)


def _relation(relation: str) -> str:
    return {"add_remove": "data sets that differ by adding or removing one record",
            "replace_one": "data sets that differ by replacing one record"}.get(relation, relation)


def _budget(c: Any) -> str:
    b = c.error_budget
    return f"eps error <= {b.eps_error:.3g}, delta error <= {b.delta_error:.3g} (already inside every number)"


# -- text ---------------------------------------------------------------------------------------------------


def report_text(cert: Any) -> str:
    """The guarantee in words and the table of certified risks (tuning, and one run where known)."""
    return Report.of(cert).text()


def report_html(cert: Any) -> str:
    """A self-contained HTML page: the guarantee in words, the risk table, the trade-off curve with the quoted
    points marked, the profile, the certificate's alternatives and what is public."""
    return Report.of(cert).html()


def _text(facts: Report) -> str:
    cert = facts.cert
    lines = ["privselect report", "=================", ""]
    lines += [_wrap(s) for s in facts.sentences()]
    lines += ["", "Certified upper bounds on attack success:", ""]
    has_run = facts.run is not None
    head = f"  {'attack':<21}{'quantity':<42}{'tuning':>10}" + (f"{'one run':>10}" if has_run else "")
    lines += [head, "  " + "-" * (len(head) - 2)]
    for attack, what, tuned, run in facts.rows():
        lines.append(f"  {attack:<21}{what:<42}{tuned:>10.4g}" + (f"{run:>10.4g}" if has_run else ""))
    lines += ["", f"Bound families tried (epsilon at delta = {cert.delta:.3g}):"]
    for name, value in cert.alternatives.items():
        mark = "  <- certified" if name == cert.bound else ""
        lines.append(f"  {name:<18}{value:>10.4g}{mark}")
    lines += ["", "What is public (the guarantee assumes it):"]
    lines += [f"  {k}: {v}" for k, v in facts.public()]
    lines += ["", _wrap(f"Risk bounds from {facts.tuning.source}. f-DP duality: Dong, Roth, Su 2022, Prop. 2.12; "
                        "reconstruction: Hayes, Mahloujifar, Balle 2023; Kaissis et al. 2023 (docs/risk.md).")]
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 100) -> str:
    import textwrap

    return textwrap.fill(text, width=width, subsequent_indent="  ")


# -- html ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Series:
    label: str
    x: np.ndarray
    y: np.ndarray
    colour: str
    dash: str = ""


def _svg_plot(series: Sequence[_Series], *, x_range: tuple[float, float], y_range: tuple[float, float],
              x_label: str, y_label: str, title: str, log_x: bool, log_y: bool,
              points: Sequence[tuple[float, float, str]] = (), points_corner: str = "top",
              legend_at: float = 1.0, width: int = 560, height: int = 400) -> str:
    """An inline SVG line chart (log or linear axes); the marked points are listed in the plot's left corner
    (``points_corner`` "top" or "bottom", where the curves leave room)."""
    left, right, top, bottom = 72, 20, 36, 56
    pw, ph = width - left - right, height - top - bottom

    def tx(v):
        lo, hi = x_range
        f = (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) if log_x else (v - lo) / (hi - lo)
        return left + pw * min(max(f, 0.0), 1.0)

    def ty(v):
        lo, hi = y_range
        v = max(v, lo)
        f = (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) if log_y else (v - lo) / (hi - lo)
        return top + ph * (1 - min(max(f, 0.0), 1.0))

    def ticks(lo, hi, log):
        if log:
            powers = list(range(math.ceil(math.log10(lo)), math.floor(math.log10(hi)) + 1))
            every = max(1, math.ceil(len(powers) / 8))  # at most ~8 labels
            return [10.0 ** e for e in powers[::-1][::every]]
        return list(np.arange(lo, hi + 1e-9 * (hi - lo), _nice_step(hi - lo)))

    def fmt(v, log):
        return (f"1e{int(round(math.log10(v)))}" if v < 0.01 else f"{v:g}") if log else f"{v:.3g}"

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{html.escape(title)}" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" class="figure">',
           f'<title>{html.escape(title)}</title>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>',
           f'<text x="{left + pw / 2}" y="22" text-anchor="middle" class="ftitle">{html.escape(title)}</text>']
    for v in ticks(*x_range, log_x):
        x = tx(v)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 18}" text-anchor="middle" class="tick">{fmt(v, log_x)}</text>')
    for v in ticks(*y_range, log_y):
        y = ty(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" class="tick">{fmt(v, log_y)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 12}" text-anchor="middle" class="axis">{html.escape(x_label)}</text>')
    out.append(f'<text transform="translate(18,{top + ph / 2}) rotate(-90)" text-anchor="middle" class="axis">'
               f'{html.escape(y_label)}</text>')
    for s in series:  # points below the y range are left out (not drawn on the axis as if they were there)
        keep = (np.isfinite(s.x) & np.isfinite(s.y) & ((s.x > 0) if log_x else True) & (s.y >= y_range[0]))
        pts = " ".join(f"{tx(a):.1f},{ty(b):.1f}" for a, b in zip(s.x[keep], s.y[keep]))
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{s.colour}" stroke-width="2"{dash} class="series">'
                   f'<title>{html.escape(s.label)}</title></polyline>')
    first = top + 20 if points_corner == "top" else top + ph - 12 - 18 * (len(points) - 1)
    for i, (a, b, label) in enumerate(points):  # numbered dots; their values listed in a corner
        x, y = tx(a), ty(b)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#c0392b" class="quoted"><title>{html.escape(label)}'
                   f'</title></circle>')
        out.append(f'<text x="{x + 7:.1f}" y="{y + 15:.1f}" class="plabel">{i + 1}</text>')
        ly = first + 18 * i
        out.append(f'<circle cx="{left + 14}" cy="{ly - 4}" r="4" fill="#c0392b"/>')
        out.append(f'<text x="{left + 24}" y="{ly}" class="plabel">{i + 1}: {html.escape(label)}</text>')
    y0 = top + (ph - 18 * len(series) - 6) * legend_at  # legend_at: 0 top, 1 bottom of the plot
    for j, s in enumerate(series):
        y = y0 + 18 * j
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        out.append(f'<line x1="{left + pw - 210}" y1="{y}" x2="{left + pw - 186}" y2="{y}" stroke="{s.colour}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{left + pw - 180}" y="{y + 4}" class="legend">{html.escape(s.label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _nice_step(span: float, target: int = 6) -> float:
    """A 1-2-5 step giving about ``target`` ticks over ``span``."""
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; max-width: 1150px;
       margin: 24px auto; padding: 0 24px; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.guarantee { background: #f4f8fb; border-left: 4px solid #2c6e9b; padding: 10px 16px; }
.guarantee p { margin: 0.4em 0; }
table { border-collapse: collapse; margin: 8px 0; } th, td { padding: 5px 12px; border-bottom: 1px solid #e4e4e4; }
th { text-align: left; background: #fafafa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.chosen td { font-weight: 600; background: #fdf6e3; }
.figures { display: flex; flex-wrap: wrap; gap: 16px; }
.figure .ftitle { font-size: 14px; font-weight: 600; } .figure .tick { font-size: 11px; fill: #555; }
.figure .axis { font-size: 12px; } .figure .legend { font-size: 12px; } .figure .plabel { font-size: 12px; fill: #a93226; }
.note { color: #555; font-size: 0.92em; }
"""


def _html(facts: Report) -> str:
    cert = facts.cert
    t, r = facts.tuning, facts.run
    esc = html.escape
    curve_t = np.asarray(t.tpr(_CURVE_FPRS, precise=False))
    series = [_Series("tuning (certified upper bound)", _CURVE_FPRS, curve_t, "#2c6e9b")]
    if r is not None:
        series.append(_Series("one run (certified upper bound)", _CURVE_FPRS, np.asarray(r.tpr(_CURVE_FPRS, precise=False)),
                              "#7f8c8d", "6 4"))
    series.append(_Series("random guess (TPR = FPR)", _CURVE_FPRS, _CURVE_FPRS, "#bbb", "2 4"))
    quoted = [(a, float(t.tpr(a)), f"TPR ≤ {float(t.tpr(a)):.3g} at FPR {a:g}") for a in QUOTED_FPRS[1:]]
    roc = _svg_plot(series, x_range=(1e-6, 1.0), y_range=(1e-6, 1.0), x_label="false-positive rate (FPR)",
                    y_label="largest true-positive rate (TPR)", title="Membership inference: the best any attack can do",
                    log_x=True, log_y=True, points=quoted)
    top = max(2.0 * cert.epsilon, 1.0) if math.isfinite(cert.epsilon) else 10.0
    top = math.ceil(top / _nice_step(top)) * _nice_step(top)
    eps_grid = np.linspace(0.0, top, 241)
    prof_series = []
    colours = ("#2c6e9b", "#8e44ad", "#27ae60")
    for i, p in enumerate(t.profiles):
        prof_series.append(_Series(f"tuning: {p.accountant}", eps_grid, np.asarray(p.delta(eps_grid), float),
                                   colours[i % 3]))
    if r is not None and r.profile is not None:
        prof_series.append(_Series("one run", eps_grid, np.asarray(r.profile.delta(eps_grid), float), "#7f8c8d", "6 4"))
    figures = [roc]
    if prof_series:
        lo = max(min(cert.delta / 100, 1e-12), 1e-300)
        figures.append(_svg_plot(prof_series, x_range=(0.0, float(eps_grid[-1])), y_range=(lo, 1.0), x_label="ε",
                                 y_label="δ(ε) (certified upper bound)", title="Privacy profile",
                                 log_x=False, log_y=True, points_corner="bottom", legend_at=0.45,
                                 points=[(cert.epsilon, cert.delta, f"certified ({cert.epsilon:.3g}, {cert.delta:.2g})")]))
    rows = "\n".join(
        f"<tr><td>{esc(a)}</td><td>{esc(w)}</td><td class='num'>{v:.4g}</td>"
        + ("" if r is None else f"<td class='num'>{'' if rv is None else f'{rv:.4g}'}</td>") + "</tr>"
        for a, w, v, rv in facts.rows())
    alt_rows = "\n".join(
        f"<tr class='{'chosen' if n == cert.bound else ''}'><td>{esc(n)}</td><td class='num'>{v:.4g}</td>"
        f"<td>{'certified' if n == cert.bound else ''}</td></tr>" for n, v in cert.alternatives.items())
    public_rows = "\n".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts.public())
    notes = "".join(f"<li>{esc(n)}</li>" for n in cert.notes)
    sentences = "".join(f"<p>{esc(s)}</p>" for s in facts.sentences())
    run_head = "" if r is None else "<th>one run</th>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>privselect report: ({cert.epsilon:.4g}, {cert.delta:.3g})-DP</title>
<style>{_CSS}</style></head>
<body>
<h1>What this privacy guarantee means</h1>
<div class="guarantee">{sentences}</div>
<h2>Certified risk bounds</h2>
<p class="note">Every number is an upper bound on the success of ANY attack, proven from the certified privacy profile
(its numerical error included).</p>
<table id="risk-table"><thead><tr><th>attack</th><th>quantity</th><th>tuning</th>{run_head}</tr></thead>
<tbody>
{rows}
</tbody></table>
<h2>Trade-off curve and privacy profile</h2>
<div class="figures">
{''.join(figures)}
</div>
<p class="note">Left: the largest true-positive rate any membership test can reach at each false-positive rate
(1 − f(FPR) for the f-DP trade-off curve implied by the profile, both neighbouring directions; log-log axes).
Right: δ(ε) for every ε; the dot is the certified (ε, δ).</p>
<h2>Bound families the certificate tried</h2>
<table id="alternatives"><thead><tr><th>bound</th><th>ε at δ = {cert.delta:.3g}</th><th></th></tr></thead>
<tbody>{alt_rows}</tbody></table>
{'<ul class="note">' + notes + '</ul>' if notes else ''}
<h2>What is public</h2>
<table id="public">{public_rows}</table>
<p class="note">Risk bounds from {esc(t.source)}. Formulas and sources: docs/risk.md (f-DP duality, Dong, Roth, Su 2022,
Prop. 2.12; reconstruction, Hayes, Mahloujifar, Balle 2023 and Kaissis et al. 2023).</p>
</body></html>
"""
