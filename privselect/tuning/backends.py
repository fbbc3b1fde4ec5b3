"""Where the runs execute: a registry of backends, each streaming results as they complete.

A backend maps a picklable function over a lazy iterable of argument tuples and yields the
results in completion order (the engine orders ties by run index, so the winner does not
depend on the order). It keeps a bounded number of tasks in flight, so the driver's memory
does not grow with K. Built in: ``"sequential"``, and through joblib ``"loky"``, ``"threading"``,
``"dask"`` (an active ``dask.distributed.Client``) and ``"ray"``. Add one with
:func:`register_backend`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

__all__ = ["Backend", "SequentialBackend", "JoblibBackend", "register_backend", "get_backend", "BACKENDS",
           "backend_names"]


class Backend(ABC):
    """Runs tasks and yields their results as they complete."""

    name: str
    in_process: bool  # True when tasks run in the driver's process (threads included)

    @abstractmethod
    def imap_unordered(self, function: Callable[..., Any], tasks: Iterable[tuple], n_jobs: int) -> Iterator[Any]:
        """Yield ``function(*task)`` for every task, in completion order."""


@dataclass(frozen=True)
class SequentialBackend(Backend):
    """Run the tasks one after another in the driver."""

    name: str = "sequential"
    in_process: bool = True

    def imap_unordered(self, function, tasks, n_jobs):
        return (function(*task) for task in tasks)


@dataclass(frozen=True)
class JoblibBackend(Backend):
    """A joblib backend; results stream with ``return_as="generator_unordered"``.

    ``prepare`` runs before the first task (registering an external backend, checking that
    its extra is installed).
    """

    name: str
    in_process: bool = False
    prepare: Callable[[], None] | None = None

    def imap_unordered(self, function, tasks, n_jobs):
        import joblib

        if self.prepare is not None:
            self.prepare()
        # parallel_config resolves the external backends (dask, ray) by name; keep it open while yielding.
        with joblib.parallel_config(backend=self.name, n_jobs=n_jobs):
            parallel = joblib.Parallel(return_as="generator_unordered", pre_dispatch="2*n_jobs")
            yield from parallel(joblib.delayed(function)(*task) for task in tasks)


def _prepare_dask() -> None:
    try:
        import distributed  # noqa: F401  (joblib's dask backend needs a distributed Client)
    except ImportError:
        raise ImportError("backend='dask' needs the dask extra: pip install 'privselect[dask]'") from None


def _prepare_ray() -> None:
    try:
        from ray.util.joblib import register_ray
    except ImportError:
        raise ImportError("backend='ray' needs the ray extra: pip install 'privselect[ray]'") from None
    register_ray()


_REGISTRY: dict[str, Backend] = {}


def register_backend(backend: Backend) -> Backend:
    """Add (or replace) a backend under ``backend.name``."""
    if not isinstance(backend, Backend):
        raise TypeError(f"a backend must subclass privselect.tuning.backends.Backend, got {type(backend).__name__}")
    _REGISTRY[backend.name] = backend
    return backend


def get_backend(name: str) -> Backend:
    """The registered backend called ``name``; a ValueError lists the names."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"backend must be one of {backend_names()}, got {name!r}") from None


def backend_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


register_backend(SequentialBackend())
register_backend(JoblibBackend("loky"))
register_backend(JoblibBackend("threading", in_process=True))
register_backend(JoblibBackend("dask", prepare=_prepare_dask))
register_backend(JoblibBackend("ray", prepare=_prepare_ray))

BACKENDS = backend_names()
