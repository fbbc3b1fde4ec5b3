"""The adaptive search (DP-HyPO, Wang et al. 2023): a bounded-density sampler that learns from earlier runs.

[`AdaptiveSearch`][privselect.tuning.adaptive.search.AdaptiveSearch] is what the user declares (the model, the
density ratio (C, c), the grid, the batch size); [`AdaptiveRun`][privselect.tuning.adaptive.search.AdaptiveRun] is the
state of ONE selection: the grid, and the released (params, noisy score) pairs of the runs so far. It is
made when a selection starts and dropped when it ends: no history outlives the selection.

Candidate ``i`` (0-based) is drawn from the projected law built from the results of runs
``0 .. b*floor(i/b) - 1`` (``b`` = ``batch_size``, public): with b = 1 every run sees all earlier ones;
with b > 1 the runs of a batch share the density of the results before the batch. K is never read:
the state counts runs, and a run's density depends on earlier results only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...selection.adaptive import DensityRatio
from ..space import Distribution
from .density import IntegerLaw, prior_only, project_density
from .grid import CandidateGrid
from .models import SearchModel, model_from

__all__ = ["AdaptiveRun", "AdaptiveSearch"]


@dataclass(frozen=True)
class AdaptiveSearch:
    """An adaptive search whose every sampling density π satisfies c <= π/π0 <= C (π0 the search space's law).

    ``model``: "gp" (Gaussian process, UCB), "parzen" (TPE-like) or a SearchModel. ``density_ratio``:
    (C, c) with c <= 1 <= C, required: it is what the search costs (about 3.3 log(C/c) on the certificate's
    RDP curve with a geometric K; ``search.certificate(privacy, k, delta)`` shows it next to the i.i.d. one).
    There is no default: no ratio is free, and a wide one (DP-HyPO's 2/0.75) needed 4.6 times the noise of
    i.i.d. search in a user's DP-SGD study. ``grid``: cells per continuous hyperparameter. ``batch_size``: runs
    that share one density (public). The certificate is ``ps.certify_adaptive``.
    """

    model: Any = "gp"
    density_ratio: Any = None
    grid: int = 32
    batch_size: int = 1
    ratio: DensityRatio = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.density_ratio is None:
            raise ValueError("AdaptiveSearch needs density_ratio=(C, c), c <= 1 <= C: what the search may move from "
                             "the prior, and what it costs in epsilon (no default: every ratio above 1 costs; a narrow "
                             "one such as (1.5, 0.8) costs least). Compare search.certificate(privacy, k, delta) with "
                             "ps.certify(privacy, k, delta) (docs/adaptive.md)")
        object.__setattr__(self, "model", model_from(self.model))
        object.__setattr__(self, "ratio", DensityRatio.of(self.density_ratio))
        object.__setattr__(self, "density_ratio", (self.ratio.upper, self.ratio.lower))
        for name in ("grid", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    def certificate(self, privacy: Any, k: Any, delta: float, *, space: Any = None) -> Any:
        """``ps.certify_adaptive`` of this search, with the i.i.d. certificate of the same runs in its notes
        (``ps.certify``): the cost of adaptivity, shown before any run."""
        import dataclasses

        from ...selection.adaptive import certify_adaptive
        from ...selection.certify import certify
        from ...selection.laws import privacy_law

        adaptive = certify_adaptive(privacy, k, delta, density_ratio=self.ratio, space=space)
        base = privacy_law(space, privacy) if callable(privacy) and not hasattr(privacy, "components") else privacy
        iid = certify(base, k, delta)
        note = (f"i.i.d. search over the same runs (ps.certify): epsilon = {iid.epsilon:.4g} at delta = {delta:g}; "
                f"this adaptive search costs {adaptive.epsilon - iid.epsilon:+.4g}")
        return dataclasses.replace(adaptive, notes=adaptive.notes + (note,))

    def start(self, space: Mapping[str, Distribution], direction: str = "maximize") -> AdaptiveRun:
        """The state of one selection over ``space`` (fresh: no history)."""
        grid = CandidateGrid(space, self.grid)
        if not prior_only(self.ratio):  # data-independent: a grid too fine for the resolution fails here, not in a run
            IntegerLaw.from_density(grid.prior, grid.prior, self.ratio)
        return AdaptiveRun(self, grid, 1.0 if direction == "maximize" else -1.0)


class AdaptiveRun:
    """One selection's sampler state (driver-side, sequential). Dropped with the selection."""

    def __init__(self, search: AdaptiveSearch, grid: CandidateGrid, sign: float) -> None:
        self.search, self.grid, self.sign = search, grid, sign
        self._pending: dict[int, np.ndarray] = {}
        self._x: list[np.ndarray] = []
        self._y: list[float] = []
        self._seen: list[int] = []  # run index of each observation
        self._law: tuple[int, IntegerLaw | None] | None = None

    def law(self, index: int) -> IntegerLaw | None:
        """The law of candidate ``index`` from the results before its batch (None when C or c is 1: the prior)."""
        start = self.search.batch_size * (index // self.search.batch_size)
        if self._law is not None and self._law[0] == start:
            return self._law[1]
        law = self._build([i for i, run in enumerate(self._seen) if run < start])
        self._law = (start, law)
        return law

    def _build(self, rows: list[int]) -> IntegerLaw | None:
        model: SearchModel = self.search.model
        ratio = self.search.ratio
        if prior_only(ratio):
            return None
        if len(rows) < model.min_observations:
            return IntegerLaw.from_density(self.grid.prior, self.grid.prior, ratio)
        x = np.stack([self._x[i] for i in rows])
        y = self.sign * np.array([self._y[i] for i in rows])
        try:
            g = model.density(self.grid.centres, self.grid.prior, x, y)
            f = project_density(g, self.grid.prior, ratio)
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            f = self.grid.prior  # a model that cannot fit: this batch samples the prior (ratio 1)
        return IntegerLaw.from_density(f, self.grid.prior, ratio)

    def draw(self, index: int, rng: np.random.Generator) -> dict[str, Any]:
        """Candidate ``index``: a cell from its law (or the prior), then the prior within the cell."""
        law = self.law(index)
        if law is None:
            cell = int(rng.choice(self.grid.size, p=self.grid.prior)) if self.grid.size > 1 else 0
        else:
            cell = law.sample(rng)
        params = self.grid.draw(cell, rng)
        self._pending[index] = self.grid.coordinates(params)
        return params

    def observe(self, index: int, score: float) -> None:
        """Run ``index`` released ``score`` (after score noise; NaN for a failed run, which is left out)."""
        x = self._pending.pop(index, None)
        if x is not None and math.isfinite(score):
            self._x.append(x)
            self._y.append(float(score))
            self._seen.append(index)


@dataclass
class AdaptiveTask:
    """The engine's run task for an adaptive search: draw from the run's law, then run ``run_candidate``."""

    state: AdaptiveRun | None
    run_candidate: Callable[[dict[str, Any], Any, Any], tuple[Any, Any, Any]]

    def _run_state(self) -> AdaptiveRun:
        if self.state is None:
            raise RuntimeError("this adaptive selection has ended (its state is dropped when the selection returns)")
        return self.state

    def __call__(self, data: Any, seeds: Any) -> tuple[Any, Any, Any]:
        params = self._run_state().draw(seeds.index, seeds.params_rng())
        return self.run_candidate(params, data, seeds)

    def observe(self, index: int, score: float) -> None:
        self._run_state().observe(index, score)
