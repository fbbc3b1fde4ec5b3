"""Experiments reproducing and extending Koskela, Redberg, Wang 2024 (KRW), one module per figure.

Every module exposes ``run(quick=False, out_dir=None) -> dict`` (the key numbers, plus the
paths of the CSV and PNG it wrote to ``experiments/results/``). Run them with
``python -m experiments list`` and ``python -m experiments run NAME|all [--quick]`` from the
checkout's root or, from code, `run`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

#: Experiment name -> module path. Names are also the CSV/PNG file stems.
EXPERIMENTS: dict[str, str] = {
    "fig1_rnm": "experiments.fig1_rnm",
    "fig2_3_geometric": "experiments.fig2_3_geometric",
    "fig4_binomial": "experiments.fig4_binomial",
    "fig6_dpsgd": "experiments.fig6_dpsgd",
    "fig7_large_batch": "experiments.fig7_large_batch",
    "fig8_tuning_sigma": "experiments.fig8_tuning_sigma",
    "accountants": "experiments.accountants",
    "affordable_candidates": "experiments.affordable_candidates",
    "tradeoff": "experiments.tradeoff",
    "linear_regression": "experiments.linear_regression",
    "subsampled_tuning": "experiments.subsampled_tuning",
    "narrow_landscape": "experiments.narrow_landscape",
}

#: Short names accepted by `run` and the command line.
ALIASES: dict[str, str] = {
    "fig1": "fig1_rnm", "fig2": "fig2_3_geometric", "fig3": "fig2_3_geometric", "fig4": "fig4_binomial",
    "fig6": "fig6_dpsgd", "fig7": "fig7_large_batch", "fig8": "fig8_tuning_sigma",
}

__all__ = ["EXPERIMENTS", "ALIASES", "resolve", "describe", "run"]


def resolve(name: str) -> str:
    """The registered name for ``name`` (a registered name or an alias such as ``fig7``)."""
    name = ALIASES.get(name, name)
    if name not in EXPERIMENTS:
        raise KeyError(f"unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)} or 'all'")
    return name


def describe(name: str) -> str:
    """First line of the experiment module's docstring."""
    module = importlib.import_module(EXPERIMENTS[resolve(name)])
    return (module.__doc__ or "").strip().splitlines()[0]


def run(name: str, quick: bool = False, out_dir: str | Path | None = None) -> dict[str, Any]:
    """Run one experiment (or ``"all"``: a dict name -> key numbers) and return its key numbers."""
    if name == "all":
        return {n: run(n, quick=quick, out_dir=out_dir) for n in EXPERIMENTS}
    module = importlib.import_module(EXPERIMENTS[resolve(name)])
    return module.run(quick=quick, out_dir=out_dir)
