"""Where the runs execute: a registry of backends, each streaming results as they complete.

A backend maps a picklable function over a lazy iterable of per-run argument tuples and yields
``function(*shared, *task)`` in completion order. ``shared`` (the trainer and the data) is the
same for every run: dask and ray send it to the workers once per selection (``Client.scatter``,
``ray.put``); loky pickles it with each run (no memory-mapped copy of the data on disk).
Every backend keeps about ``2 * n_jobs`` runs in flight (windowed submission; loky through
joblib's ``pre_dispatch``), so neither the submitted tasks nor the results waiting in the driver
grow with K; the engine keeps only the
running best and orders ties by run index, so the winner does not depend on completion order.

Built in:

* ``"sequential"``: one run after another in the driver;
* ``"loky"``: joblib's process pool (``return_as="generator_unordered"``), kept alive across tunings;
* ``"threading"``: a thread pool in the driver;
* ``"dask"``: the active ``dask.distributed.Client`` (``distributed.as_completed``);
* ``"ray"``: the running ray instance, or a local one started with defaults (``ray.wait``).

Each backend names the exceptions by which it reports the loss of a worker
([`Backend.worker_loss_errors`][privselect.tuning.backends.Backend.worker_loss_errors]): loky's ``TerminatedWorkerError``/``BrokenProcessPool``,
dask's ``KilledWorker`` and ``FutureCancelledError``, ray's ``WorkerCrashedError``, ``NodeDiedError``, ``RayActorError`` and
``ObjectLostError``. The engine re-executes the runs lost that way with their own seeds
([`MAX_REEXECUTIONS`][privselect.tuning.backends.MAX_REEXECUTIONS], docs/cluster.md). Add a backend with [`register_backend`][privselect.tuning.backends.register_backend].
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import WorkerLossError

__all__ = ["Backend", "SequentialBackend", "JoblibBackend", "ThreadingBackend", "DaskBackend", "RayBackend",
           "register_backend", "get_backend", "BACKENDS", "backend_names", "MAX_REEXECUTIONS", "WorkerLossError"]

MAX_REEXECUTIONS = 3
"""How many times the engine re-submits the runs lost with a worker before giving up."""


class Backend(ABC):
    """Runs tasks and yields their results as they complete."""

    name: str
    in_process: bool  # True when tasks run in the driver's process (threads included)

    @abstractmethod
    def imap_unordered(self, function: Callable[..., Any], shared: tuple, tasks: Iterable[tuple],
                       n_jobs: int) -> Iterator[Any]:
        """Yield ``function(*shared, *task)`` for every task, in completion order.

        At most ``2 * n_jobs`` tasks are submitted and not yet yielded at any time.
        """

    def worker_loss_errors(self) -> tuple[type[BaseException], ...]:
        """The exceptions by which this backend reports a lost worker (an infrastructure fault)."""
        return ()


@dataclass(frozen=True)
class SequentialBackend(Backend):
    """Run the tasks one after another in the driver."""

    name: str = "sequential"
    in_process: bool = True

    def imap_unordered(self, function, shared, tasks, n_jobs):
        return (function(*shared, *task) for task in tasks)


@dataclass(frozen=True)
class JoblibBackend(Backend):
    """A joblib backend; results stream with ``return_as="generator_unordered"``.

    ``max_nbytes=None`` (the default here, unlike joblib's ``"1M"``): the data is pickled to the
    workers through loky's pipes and is never memory-mapped, so no file of the raw data exists
    in ``/dev/shm`` or the temp folder, and none can outlive a crash (a SIGKILL of the driver
    and its workers leaves joblib's memmapping folder behind: docs/cluster.md). The price is
    one pickling of the data per run instead of per selection. For data too large for that,
    register ``JoblibBackend("loky", max_nbytes="1M")`` and clean the temp folder after a crash.
    ``pre_dispatch="2*n_jobs"`` with ``batch_size=1`` bounds what is dispatched ahead
    (automatic batching would return many outputs at once); joblib dispatches one more task
    as each completes and holds finished results until the engine takes them, which it does at
    once (docs/cluster.md: 5 outputs alive at most at K = 200 in the benchmark).
    """

    name: str
    in_process: bool = False
    max_nbytes: str | int | None = None

    def imap_unordered(self, function, shared, tasks, n_jobs):
        import joblib

        with joblib.parallel_config(backend=self.name, n_jobs=n_jobs):
            parallel = joblib.Parallel(return_as="generator_unordered", pre_dispatch="2*n_jobs", batch_size=1,
                                       max_nbytes=self.max_nbytes)
            yield from parallel(joblib.delayed(function)(*shared, *task) for task in tasks)

    def worker_loss_errors(self):
        from concurrent.futures.process import BrokenProcessPool  # loky's TerminatedWorkerError subclasses it

        return (BrokenProcessPool,)


@dataclass(frozen=True)
class ThreadingBackend(Backend):
    """Threads of the driver (``concurrent.futures.ThreadPoolExecutor``), for trainers that release the GIL."""

    name: str = "threading"
    in_process: bool = True

    def imap_unordered(self, function, shared, tasks, n_jobs):
        from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

        workers = n_jobs if n_jobs > 0 else (os.cpu_count() or 1)
        pending: set = set()
        with ThreadPoolExecutor(max_workers=workers) as executor:
            def submit(task):
                pending.add(executor.submit(function, *shared, *task))

            def next_done():
                done = next(iter(wait(pending, return_when=FIRST_COMPLETED).done))
                pending.discard(done)
                return done.result()

            try:
                yield from _windowed(submit, next_done, tasks, 2 * workers)
            finally:
                for future in pending:
                    future.cancel()
                pending.clear()


def _windowed(submit: Callable[[tuple], Any], next_done: Callable[[], Any], tasks: Iterable[tuple],
              window: int) -> Iterator[Any]:
    """Keep ``window`` tasks in flight; yield each result (``next_done()``) as one completes."""
    in_flight = 0
    for task in tasks:  # the next task is drawn only when there is room for it
        submit(task)
        in_flight += 1
        if in_flight == window:
            yield next_done()
            in_flight -= 1
    for _ in range(in_flight):
        yield next_done()


@dataclass(frozen=True)
class DaskBackend(Backend):
    """The active ``dask.distributed.Client`` (``Client(address)`` or a ``LocalCluster``).

    ``shared`` is scattered to every worker once (``broadcast=True``, so a lost worker does not
    take the data with it); runs stream back through ``distributed.as_completed``. ``n_jobs=-1``
    means one run in flight per worker thread, times two. Dask itself reschedules a task whose
    worker died, up to ``distributed.scheduler.allowed-failures`` times, before it reports
    ``KilledWorker``; a run cancelled because a dying worker took data it depends on reports
    ``FutureCancelledError``: both are worker losses (the engine submits the runs again, scattering anew).
    """

    name: str = "dask"
    in_process: bool = False

    def imap_unordered(self, function, shared, tasks, n_jobs):
        try:
            import distributed
        except ImportError:
            raise ImportError("backend='dask' needs the dask extra: pip install 'privselect[dask]'") from None
        try:
            client = distributed.get_client()
        except ValueError:
            raise RuntimeError("backend='dask' needs a dask.distributed Client: create one first, e.g. "
                               "distributed.Client('tcp://scheduler:8786') or Client(LocalCluster())") from None
        workers = n_jobs if n_jobs > 0 else max(1, sum(client.nthreads().values()))
        shared_futures = client.scatter(list(shared), broadcast=True, hash=False) if shared else []
        completed = distributed.as_completed()

        def submit(task):
            completed.add(client.submit(function, *shared_futures, *task, pure=False))

        def next_done():
            future = next(completed)
            try:
                return future.result()
            finally:
                future.release()

        try:
            yield from _windowed(submit, next_done, tasks, 2 * workers)
        finally:
            client.cancel(list(completed.futures) + shared_futures)

    def worker_loss_errors(self):
        from distributed import KilledWorker
        from distributed.client import FutureCancelledError

        # a killed worker can also take a scattered replica the scheduler still counted on: the runs that need it
        # are then cancelled ("lost dependencies") instead of rescheduled; the next round scatters the data again
        return (KilledWorker, FutureCancelledError)


@dataclass(frozen=True)
class RayBackend(Backend):
    """The running ray instance (``ray.init(address=...)``), or a local one started with defaults.

    ``shared`` goes to the object store once (``ray.put``); runs are ray tasks without ray's own
    retries (``max_retries=0``: the engine re-executes lost runs), streamed with ``ray.wait``.
    ``n_jobs=-1`` means one run in flight per CPU of the cluster, times two.
    """

    name: str = "ray"
    in_process: bool = False

    def imap_unordered(self, function, shared, tasks, n_jobs):
        try:
            import ray
        except ImportError:
            raise ImportError("backend='ray' needs the ray extra: pip install 'privselect[ray]'") from None
        if not ray.is_initialized():
            ray.init()
        workers = n_jobs if n_jobs > 0 else max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(num_cpus=1, max_retries=0)(_call)
        shared_refs = [ray.put(value) for value in shared]
        pending: list = []

        def submit(task):
            pending.append(remote.remote(function, *shared_refs, *task))

        def next_done():
            (ready,), rest = ray.wait(pending, num_returns=1)
            pending[:] = rest
            return ray.get(ready)

        try:
            yield from _windowed(submit, next_done, tasks, 2 * workers)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            pending.clear()
            shared_refs.clear()

    def worker_loss_errors(self):
        from ray.exceptions import NodeDiedError, ObjectLostError, RayActorError, WorkerCrashedError

        return (WorkerCrashedError, NodeDiedError, RayActorError, ObjectLostError)


def _call(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` as a ray task (``ray.remote`` takes Python functions only, not builtins)."""
    return function(*args)


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
register_backend(ThreadingBackend())
register_backend(DaskBackend())
register_backend(RayBackend())

BACKENDS = backend_names()
