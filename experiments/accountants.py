"""Accountants side by side on the KRW Fig. 6 and Fig. 7 DP-SGD bases: eps and wall time, alone and under selection.

Base run: eps at delta=1e-5 from privselect PRV and CF (certified brackets), privselect RDP,
dp-accounting PLD (pessimistic, value discretisation 1e-3 and 1e-4), prv-accountant
(eps_error 0.01) and dp-accounting RDP. Selection ("best of K runs", K geometric with mean
10): KRW Thm 5.2 applied to each accountant's delta(eps) (for the PLD this is dp-accounting's
pessimistic curve tabulated every 1e-3 in eps, not a privselect certificate; prv-accountant
has no vectorised delta(eps),
so it is left out), against the RDP bound KRW Thm 5.1 from privselect and from dp-accounting
(``RepeatAndSelectDpEvent``). The peer runners are those of ``tests/support/peers.py`` (shared with ``benchmarks/accounting.py``).
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

import privselect as ps
from tests.support.peers import (
    DELTA,
    dp_accounting_pld,
    privselect_mechanism,
    run_dp_accounting_pld,
    run_dp_accounting_rdp,
    run_prv_accountant,
)
from tests.support.timing import best_of

from . import _common as c

NAME = "accountants"
MEAN_K = 10.0
#: dp-accounting's delta(eps) is tabulated on this eps step and read as a step function (an
#: upper bound since delta is non-increasing): it can only add <= 1e-3 to the selection eps.
PLD_GRID_STEP = 1e-3
MECHANISMS = (
    ("DP-SGD, KRW Fig. 6", [(1.1, 256 / 60000, math.ceil(60 / (256 / 60000)))]),
    ("large batch, KRW Fig. 7", [(21.1, 16384 / 50000, 250)]),
)


def _dp_accounting_selection(parts) -> float:
    import dp_accounting
    from dp_accounting.dp_event import RepeatAndSelectDpEvent

    acc = dp_accounting.rdp.RdpAccountant()
    events = [dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), t) for s, q, t in parts]
    event = events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)
    acc.compose(RepeatAndSelectDpEvent(event, MEAN_K, 1))  # shape 1: geometric K
    return acc.get_epsilon(DELTA)


def _rows_for(label: str, parts, repeat: int) -> list[dict]:
    mech = privselect_mechanism(parts)
    k = ps.Geometric(mean=MEAN_K)
    rows = []

    def add(accountant, base_fn, selection_fn=None, *, bound="Thm 5.2 on this profile", certified=True):
        row = {"mechanism": label, "accountant": accountant, "delta": DELTA, "mean_k": MEAN_K,
               "certified_by_privselect": certified}
        try:
            (low, up, profile), seconds = best_of(base_fn, repeat=repeat)
            row.update(eps_lower=low, eps_upper=up, seconds=seconds)
        except Exception as exc:  # an experiment reports what failed and goes on
            row.update(eps_lower=math.nan, eps_upper=math.nan, seconds=math.nan, note=f"failed: {exc}")
            rows.append(row)
            return
        if selection_fn is not None:
            eps_sel, sel_seconds = best_of(lambda: selection_fn(profile), repeat=1)
            row.update(selection_bound=bound, selection_eps=eps_sel, selection_seconds=sel_seconds)
        rows.append(row)

    def privselect_base(method, **opts):
        def fn():
            prof = ps.privacy_profile(mech, accountant=method, **opts)
            low, up = prof.epsilon_bounds(DELTA)
            return (math.nan if method == "rdp" else low), up, prof
        return fn

    def thm52(profile):
        return c.profile_epsilon(profile, k, DELTA)

    add("privselect PRV", privselect_base("prv"), thm52)
    add("privselect CF", privselect_base("cf"), thm52)
    add("privselect RDP-to-profile", privselect_base("rdp"), thm52, bound="Thm 5.2 on the RDP-converted profile")
    for interval in (1e-3, 1e-4):
        def pld_base(interval=interval):
            eps = run_dp_accounting_pld(parts, interval)
            grid = np.arange(-5.0, 40.0, PLD_GRID_STEP)
            prof = c.tabulated_profile(grid, np.asarray(dp_accounting_pld(parts, interval).get_delta_for_epsilon(grid), dtype=float),
                                       f"dp-accounting PLD {interval:g}", mechanism=mech)
            return math.nan, eps, prof
        add(f"dp-accounting PLD {interval:g}", pld_base, thm52, certified=False)
    add("prv-accountant eps_err 0.01", lambda: (lambda r: (r[0], r[2], None))(run_prv_accountant(parts)),
        certified=False)
    add("dp-accounting RDP", lambda: (math.nan, run_dp_accounting_rdp(parts), None),
        lambda _: _dp_accounting_selection(parts), bound="Thm 5.1 (RepeatAndSelectDpEvent)", certified=False)
    add("privselect RDP", lambda: (math.nan, float(ps.privacy_profile(mech, accountant="rdp").epsilon(DELTA)), None),
        lambda _: float(ps.certify(mech, k, DELTA, bound="rdp").epsilon), bound="Thm 5.1")
    return rows


def run(quick: bool = False, out_dir=None) -> dict:
    started = time.perf_counter()
    logging.getLogger().setLevel(logging.ERROR)  # dp-accounting warns about its optimistic fallback
    mechanisms = MECHANISMS[1:] if quick else MECHANISMS
    rows = [row for label, parts in mechanisms for row in _rows_for(label, parts, repeat=1 if quick else 3)]

    fig, axes = c.figure(len(mechanisms), 2, width=6.0, height=4.6)
    for r, (label, _) in enumerate(mechanisms):
        mine = [row for row in rows if row["mechanism"] == label]
        names = [row["accountant"] + (f"\n[selection: {row['selection_bound']}]" if "selection_bound" in row else "")
                 for row in mine]
        y = np.arange(len(mine))
        ax = axes[r, 0]
        base = np.array([row["eps_upper"] for row in mine], dtype=float)
        sel = np.array([row.get("selection_eps", math.nan) for row in mine], dtype=float)
        ax.barh(y - 0.2, base, height=0.4, color=c.COLORS[0], label=r"one run")
        ax.barh(y + 0.2, sel, height=0.4, color=c.COLORS[1], label=rf"best of $K$, $E[K]={MEAN_K:g}$ (geometric)")
        for yy, v in zip(y + 0.2, sel):
            if np.isfinite(v):
                ax.text(v, yy, f" {v:.3f}", va="center", fontsize=7)
        for yy, v in zip(y - 0.2, base):
            if np.isfinite(v):
                ax.text(v, yy, f" {v:.3f}", va="center", fontsize=7)
        ax.set_yticks(y, names)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.7 * np.nanmax(np.concatenate([base, sel])))
        ax.set_xlabel(rf"$\varepsilon$ at $\delta={c.tex_number(DELTA)}$")
        ax.set_title(label)
        ax.legend(loc="upper right")
        ax = axes[r, 1]
        secs = np.array([row["seconds"] for row in mine], dtype=float)
        ax.barh(y, secs, color=c.COLORS[2])
        ax.set_yticks(y, [""] * len(y))
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("seconds for the base eps (build + query)")
        ax.set_title(f"{label}: wall time")

    key = {"delta": DELTA, "mean_k": MEAN_K}
    short = {"DP-SGD, KRW Fig. 6": "fig6", "large batch, KRW Fig. 7": "fig7"}
    for row in rows:
        tag = f"{short[row['mechanism']]}_{row['accountant'].replace(' ', '_').replace('-', '_')}"
        key[f"eps_{tag}"] = row["eps_upper"]
        key[f"sec_{tag}"] = row["seconds"]
        if "selection_eps" in row:
            key[f"sel_eps_{tag}"] = row["selection_eps"]
    columns = ["mechanism", "accountant", "delta", "eps_lower", "eps_upper", "seconds", "mean_k", "selection_bound",
               "selection_eps", "selection_seconds", "certified_by_privselect", "note"]
    return c.finish(NAME, rows, fig, quick=quick, out_dir=out_dir, key=key, started=started, columns=columns)
