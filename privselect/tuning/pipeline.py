"""Tuning inside a pipeline, on the shared engine: subsampled candidates and a final run.

Around [`run_selection`][privselect.tuning.engine.run_selection] (docs/pipelines.md):

1. with ``tuning_rate = r < 1``, one Poisson subsample of the records is drawn (each record kept
   with probability r, independently of the data, from the seed's own stream); the candidates run
   on it. The subsample's mask stays inside: it is never stored, returned or logged;
2. the selection runs as always (K drawn once, every run completes, only the winner leaves);
3. with a `FinalRun`, its ``train(params, data, rng)`` trains the final model with the
   winner's hyperparameters (passed through the user's ``extrapolate(params, r)`` rule) on the
   full data, or on the records outside the subsample (``data="complement"``). It runs once, with
   its own seed stream; its output passes the release guard; if it raises,
   [`FinalRunFailedError`][privselect.errors.FinalRunFailedError] (no exception text, no data) is raised and nothing is released.
   With K = 0 nothing is selected and the final run does not happen (a data-independent event).

The certificate is asked of [`privselect.selection.pipeline.certify_pipeline`][privselect.selection.pipeline.certify_pipeline] by the front
ends; nothing here computes privacy.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validation as check
from ..errors import FinalRunFailedError
from ..mechanisms import Mechanism
from .engine import Selected, SelectionPlan, run_selection
from .globalstate import saved_globals, seed_globals
from .run import OPERATOR_EXCEPTIONS, RunTask, release_payload, silenced

__all__ = ["FinalRun", "FinalRunFailedError", "split_records", "run_pipeline"]

FINAL_DATA = ("full", "complement")


@dataclass(frozen=True)
class FinalRun:
    """The final training run of a pipeline, with the winner's hyperparameters.

    ``train(params, data, rng) -> output`` (the trained model); ``privacy``: the Mechanism of this
    one run on the data it sees; ``data``: ``"full"`` or ``"complement"`` (the records outside the
    tuning subsample; needs ``tuning_rate < 1``); ``extrapolate(params, tuning_rate) -> params``:
    the user's data-independent rule from the subsample's hyperparameters to the full data's
    (default: unchanged).
    """

    train: Callable[[Any, Any, np.random.Generator], Any]
    privacy: Mechanism
    data: str = "full"
    extrapolate: Callable[[Any, float], Any] | None = None

    def __post_init__(self) -> None:
        if not callable(self.train):
            raise TypeError("FinalRun.train must be callable: train(params, data, rng) -> output")
        if not isinstance(self.privacy, Mechanism):
            raise TypeError(f"FinalRun.privacy must be a Mechanism (the final run's privacy), got "
                            f"{type(self.privacy).__name__}")
        if self.data not in FINAL_DATA:
            raise ValueError(f"FinalRun.data must be one of {FINAL_DATA}, got {self.data!r}")
        if self.extrapolate is not None and not callable(self.extrapolate):
            raise TypeError("FinalRun.extrapolate must be callable: extrapolate(params, tuning_rate) -> params")


def split_records(data: Any, keep: np.ndarray) -> Any:
    """The records of ``data`` where ``keep`` is True: an array (rows), or a tuple/list of arrays
    with one row per record (e.g. ``(X, y)``). Other layouts: pass ``split=`` to the tuner."""
    if isinstance(data, np.ndarray):
        return data[keep]
    if isinstance(data, (tuple, list)) and data and all(isinstance(a, np.ndarray) and len(a) == keep.size
                                                         for a in data):
        return type(data)(a[keep] for a in data)
    raise TypeError("subsampled tuning needs data as an array or a tuple of arrays with one row per record "
                    "(e.g. (X, y)), or a split=callable(data, keep_mask) -> data")


def record_count(data: Any) -> int:
    """Number of records of ``data`` (rows of the array, or of the tuple's first array)."""
    first = data[0] if isinstance(data, (tuple, list)) and data else data
    try:
        return len(first)
    except TypeError:
        raise TypeError("subsampled tuning needs data with one row per record (an array or a tuple of arrays)") \
            from None


def tuning_rate_of(value: object) -> float:
    return check.half_open_unit("tuning_rate", value)


def run_pipeline(task: RunTask, data: Any, plan: SelectionPlan, *, final: FinalRun | None, tuning_rate: float,
                 split: Callable[[Any, np.ndarray], Any] = split_records) -> tuple[Selected, Any]:
    """Subsample, select, then run ``final``: ``(selected, final output or None)`` (module docstring)."""
    # Children 0-2 of the seed belong to run_selection; 3 draws the subsample, 4 seeds the final run.
    _, _, _, mask_seed, final_seed = np.random.SeedSequence(plan.seed).spawn(5)
    tuning_data, final_data = data, data
    if tuning_rate < 1:
        keep = np.random.Generator(np.random.PCG64(mask_seed)).random(record_count(data)) < tuning_rate
        tuning_data = split(data, keep)
        if final is not None and final.data == "complement":
            final_data = split(data, ~keep)
        del keep
    selected = run_selection(task, tuning_data, plan)
    del tuning_data
    if final is None or not selected.selected:
        return selected, None
    params = selected.params if final.extrapolate is None else final.extrapolate(selected.params, tuning_rate)
    failed, payload = False, b""
    (global_seed,) = final_seed.spawn(1)
    with saved_globals(), silenced():
        try:
            seed_globals(global_seed)
            output = final.train(params, final_data, np.random.Generator(np.random.PCG64(final_seed)))
            parts, output = [None, output, None], None
            payload = release_payload(parts, plan.release)  # by value, guarded, inside the silence
        except OPERATOR_EXCEPTIONS:
            raise
        except BaseException:  # noqa: BLE001 - raised below without the exception (it may carry data)
            failed = True
        output = None
    if failed:
        raise FinalRunFailedError("the final training run raised, or returned a value that is not released (run it "
                                  "on public data to see why); nothing was released")
    return selected, pickle.loads(payload)[1]
