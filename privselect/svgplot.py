"""Inline SVG line charts for the self-contained HTML report (no matplotlib, no external resource).

A chart is drawn in a fixed viewBox and scales to its container (CSS ``width: 100%``); its fonts are sized to
stay readable when the page is 400 px wide. The legend and the list of marked points are not drawn inside the
SVG: the page names every curve in words next to the figure (``privselect.report``), where text reflows.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Series", "nice_step", "svg_plot"]

#: The viewBox: small enough that its text stays readable when the figure is scaled down to a phone's width.
WIDTH, HEIGHT = 480, 360


@dataclass(frozen=True)
class Series:
    """One curve: its label (the SVG tooltip; the page's legend names it in words), points, colour and dash."""

    label: str
    x: np.ndarray
    y: np.ndarray
    colour: str
    dash: str = ""


def nice_step(span: float, target: int = 6) -> float:
    """A 1-2-5 step giving about ``target`` ticks over ``span``."""
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def svg_plot(series: Sequence[Series], *, x_range: tuple[float, float], y_range: tuple[float, float],
             x_label: str, y_label: str, title: str, log_x: bool, log_y: bool,
             points: Sequence[tuple[float, float, str]] = (), width: int = WIDTH, height: int = HEIGHT) -> str:
    """An inline SVG line chart (log or linear axes) with numbered marked ``points`` (x, y, label)."""
    left, right, top, bottom = 66, 14, 12, 52
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

    def ticks(lo, hi, log, most):
        if log:
            powers = list(range(math.ceil(math.log10(lo)), math.floor(math.log10(hi)) + 1))
            every = max(1, math.ceil(len(powers) / most))
            return [10.0 ** e for e in powers[::-1][::every]]
        return list(np.arange(lo, hi + 1e-9 * (hi - lo), nice_step(hi - lo, most)))

    def fmt(v, log):
        return (f"1e{int(round(math.log10(v)))}" if v < 0.01 else f"{v:g}") if log else f"{v:.3g}"

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{html.escape(title)}" '
           f'viewBox="0 0 {width} {height}" preserveAspectRatio="xMidYMid meet" class="figure">',
           f'<title>{html.escape(title)}</title>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>']
    for v in ticks(*x_range, log_x, 6):
        x = tx(v)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 19}" text-anchor="middle" class="tick">{fmt(v, log_x)}</text>')
    for v in ticks(*y_range, log_y, 6):
        y = ty(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 5:.1f}" text-anchor="end" class="tick">{fmt(v, log_y)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 8}" text-anchor="middle" class="axis">'
               f'{html.escape(x_label)}</text>')
    out.append(f'<text transform="translate(16,{top + ph / 2}) rotate(-90)" text-anchor="middle" class="axis">'
               f'{html.escape(y_label)}</text>')
    for s in series:  # points below the y range are left out (not drawn on the axis as if they were there)
        keep = (np.isfinite(s.x) & np.isfinite(s.y) & ((s.x > 0) if log_x else True) & (s.y >= y_range[0]))
        pts = " ".join(f"{tx(a):.1f},{ty(b):.1f}" for a, b in zip(s.x[keep], s.y[keep]))
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{s.colour}" stroke-width="2.5"{dash} class="series">'
                   f'<title>{html.escape(s.label)}</title></polyline>')
    for i, (a, b, label) in enumerate(points):  # numbered dots; the page lists their values
        x, y = tx(a), ty(b)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="#c0392b" class="quoted"><title>{html.escape(label)}'
                   f'</title></circle>')
        out.append(f'<text x="{x + 8:.1f}" y="{y + 18:.1f}" class="plabel">{i + 1}</text>')
    out.append("</svg>")
    return "\n".join(out)
