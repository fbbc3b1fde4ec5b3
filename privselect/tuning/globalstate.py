"""The global random states of the loaded frameworks: seeded per run, the caller's restored after the selection.

A run that draws from a global generator (``np.random.*``, ``random.*``, torch's default
generator, which ``nn.Linear``'s initialisation uses) would otherwise advance the caller's state
once per run: stepping a copy of the state from before ``run()`` until it matches tells K. So:

* each run starts with every loaded framework's global state set from the run's own seed
  ([`seed_globals`][privselect.tuning.globalstate.seed_globals]): numpy's legacy ``RandomState``
  (``init_by_array`` over 624 words), ``random`` (a 256-bit integer), torch's CPU generator (its whole
  Mersenne-twister state, 624 words: ``manual_seed`` keeps 32 bits) and, when CUDA is available,
  every CUDA generator (64 bits, Philox). Runs are then reproducible even through global draws;
* [`saved_globals`][privselect.tuning.globalstate.saved_globals] restores the caller's states
  when the selection ends, however it ends.

Only frameworks already in ``sys.modules`` are touched: privselect imports none of them.

[`restored_settings`][privselect.tuning.globalstate.restored_settings] does the same for the process
settings a run commonly changes (``PROCESS_SETTINGS``), around each run in every process that runs one (the
caller's with the in-process backends, each reused worker): the environment, the working directory, numpy's
error and print options, scikit-learn's ``set_config``, torch's thread count and default dtype (if torch is
loaded), the recursion limit and switch interval, the collector's thresholds, enabled state and callbacks, the
profile and trace hooks, the exception hooks, and tempfile's ``tempdir`` and private name generator (each run
gets a fresh one, seeded from the operating system's entropy, never from the secret seed; the caller's
is put back after). Concurrent runs in one process (threads) restore when the last of them ends. What cannot be
restored (the collector's statistics, thread-name counters, imported modules) is listed in docs/release.md.
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..memo import quiet_cache

__all__ = ["seed_globals", "saved_globals", "mt19937_torch_state", "MT_WORDS", "restored_settings", "PROCESS_SETTINGS",
           "Setting"]

MT_WORDS = 624  # the Mersenne twister's state: 624 words of 32 bits
_STATE_BYTES = 5056  # torch's CPUGeneratorImplState: seed (8), left, seeded (4 + 4), next (8), state (624 x 8), ...
_WORDS_AT = 24


def mt19937_torch_state(torch: Any, words: np.ndarray) -> Any:
    """A torch CPU generator state (uint8 tensor) holding the 624 Mersenne-twister ``words``."""
    state = _seeded_template(torch).copy()
    state[_WORDS_AT:_WORDS_AT + 8 * MT_WORDS] = np.asarray(words, dtype=np.uint64).astype("<u8").view(np.uint8)
    return torch.from_numpy(state)


_TEMPLATES: dict[int, np.ndarray] = {}


def _seeded_template(torch: Any) -> np.ndarray:
    """The state of a CPU generator after ``manual_seed(0)``, its layout checked once per torch module."""
    template = _TEMPLATES.get(id(torch))
    if template is None:
        made = torch.Generator(device="cpu")
        made.manual_seed(0)
        template = made.get_state().numpy().copy()
        _check_layout(template)
        _TEMPLATES[id(torch)] = template
    return template


def _check_layout(state: np.ndarray) -> None:
    """Refuse to seed a torch whose CPU generator state is not the layout written above (after ``manual_seed(0)``)."""
    words = np.frombuffer(state[_WORDS_AT:_WORDS_AT + 8 * MT_WORDS].tobytes(), "<u8")
    left_seeded = np.frombuffer(state[8:16].tobytes(), "<i4")
    if state.size != _STATE_BYTES or not np.array_equal(words, _mt19937_init(0)) or list(left_seeded) != [1, 1]:
        raise RuntimeError("this torch's CPU generator state has an unknown layout; privselect cannot set its 624 "
                           "words from rng (a 32-bit manual_seed would be guessable)")


@quiet_cache(maxsize=1)
def _mt19937_init(seed: int) -> np.ndarray:
    """The Mersenne twister's initial state for ``seed`` (Matsumoto, Nishimura 1998, init_genrand); a recurrence."""
    words = [seed & 0xFFFFFFFF]
    for j in range(1, MT_WORDS):
        words.append((1812433253 * (words[-1] ^ (words[-1] >> 30)) + j) & 0xFFFFFFFF)
    return np.array(words, dtype=np.uint64)


@quiet_cache(maxsize=4)
def _cuda_ready(torch: Any) -> bool:
    cuda = getattr(torch, "cuda", None)
    try:
        return bool(cuda is not None and cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken CUDA setup has no generator to seed
        return False


def seed_globals(seed: np.random.SeedSequence) -> None:
    """Set the global random state of every loaded framework from ``seed`` (module docstring)."""
    # PCG64 from the seed draws the words: SeedSequence.generate_state is slow for a thousand words
    words = np.random.Generator(np.random.PCG64(seed)).integers(0, 2**32, size=2 * MT_WORDS + 10, dtype=np.uint32)
    np.random.seed(words[:MT_WORDS])  # init_by_array over 624 words
    random.seed(int.from_bytes(words[MT_WORDS:MT_WORDS + 8].astype("<u4").tobytes(), "little"))
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "default_generator"):
        return
    torch.default_generator.set_state(mt19937_torch_state(torch, words[MT_WORDS + 8:2 * MT_WORDS + 8]))
    if _cuda_ready(torch):
        torch.cuda.manual_seed_all(int(words[-2]) | (int(words[-1]) << 32))


@contextlib.contextmanager
def saved_globals() -> Iterator[None]:
    """Restore the caller's global random states (numpy legacy, ``random``, torch CPU and initialised CUDA) on exit."""
    numpy_state, random_state = np.random.get_state(), random.getstate()
    torch = sys.modules.get("torch")
    torch_state = cuda_states = None
    if torch is not None and hasattr(torch, "get_rng_state"):
        torch_state = torch.get_rng_state()
        if _cuda_ready(torch) and torch.cuda.is_initialized():
            cuda_states = torch.cuda.get_rng_state_all()
    try:
        yield
    finally:
        np.random.set_state(numpy_state)
        random.setstate(random_state)
        if torch is not None and torch_state is not None:
            torch.set_rng_state(torch_state)
        if torch is not None and cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


# -- process settings: saved before a run, put back after ------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One process setting: ``read()`` its value (None: not applicable now, e.g. torch not loaded), ``write(value)``."""

    name: str
    read: Callable[[], Any]
    write: Callable[[Any], None]


def _write_environ(saved: dict[str, str]) -> None:
    for name in [name for name in os.environ if name not in saved]:
        del os.environ[name]
    for name, value in saved.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _loaded(module: str, read: Callable[[Any], Any]) -> Callable[[], Any]:
    return lambda: None if sys.modules.get(module) is None else read(sys.modules[module])


def _torch_write(write: Callable[[Any, Any], None]) -> Callable[[Any], None]:
    return lambda value: write(sys.modules["torch"], value)


def _write_callbacks(saved: list) -> None:
    gc.callbacks[:] = saved


def _write_gc_enabled(enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()


PROCESS_SETTINGS: tuple[Setting, ...] = (
    Setting("os.environ", lambda: dict(os.environ), _write_environ),
    Setting("working directory", os.getcwd, os.chdir),
    Setting("numpy error handling", np.geterr, lambda saved: None if np.seterr(**saved) is None else None),
    Setting("numpy print options", np.get_printoptions, lambda saved: np.set_printoptions(**saved)),
    Setting("scikit-learn config", _loaded("sklearn", lambda sklearn: sklearn.get_config()),
            lambda saved: sys.modules["sklearn"].set_config(**saved)),
    Setting("torch threads", _loaded("torch", lambda torch: torch.get_num_threads()),
            _torch_write(lambda torch, value: torch.set_num_threads(value))),
    Setting("torch default dtype", _loaded("torch", lambda torch: torch.get_default_dtype()),
            _torch_write(lambda torch, value: torch.set_default_dtype(value))),
    Setting("recursion limit", sys.getrecursionlimit, sys.setrecursionlimit),
    Setting("switch interval", sys.getswitchinterval, sys.setswitchinterval),
    Setting("gc thresholds", gc.get_threshold, lambda saved: gc.set_threshold(*saved)),
    Setting("gc enabled", gc.isenabled, _write_gc_enabled),
    Setting("gc callbacks", lambda: list(gc.callbacks), _write_callbacks),
    Setting("profile hook", sys.getprofile, sys.setprofile),
    Setting("trace hook", sys.gettrace, sys.settrace),
    Setting("threads' profile hook", threading.getprofile, threading.setprofile),
    Setting("threads' trace hook", threading.gettrace, threading.settrace),
    Setting("sys.excepthook", lambda: sys.excepthook, lambda hook: setattr(sys, "excepthook", hook)),
    Setting("sys.unraisablehook", lambda: sys.unraisablehook, lambda hook: setattr(sys, "unraisablehook", hook)),
    Setting("threading.excepthook", lambda: threading.excepthook, lambda hook: setattr(threading, "excepthook", hook)),
    Setting("tempfile.tempdir", lambda: (tempfile.tempdir,), lambda saved: setattr(tempfile, "tempdir", saved[0])),
    Setting("tempfile name generator", lambda: (getattr(tempfile, "_name_sequence", None),),
            lambda saved: setattr(tempfile, "_name_sequence", saved[0])),
)
"""The settings restored around each run; ``read`` returning None means the setting does not apply now."""


def _fresh_name_generator() -> None:
    """A tempfile name generator of the run's own, seeded from the OS's entropy when first used (never the seed)."""
    maker = getattr(tempfile, "_RandomNameSequence", None)
    if maker is not None and hasattr(tempfile, "_name_sequence"):
        tempfile._name_sequence = maker()  # the module's private generator


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values that do not compare: write the saved one back
        return False


def _read(setting: Setting) -> Any:
    try:
        return setting.read()
    except Exception:  # noqa: BLE001 - a setting that cannot be read now (a deleted working directory) is skipped
        return None


def _restore(saved: list[tuple[Setting, Any]]) -> None:
    for setting, value in saved:
        try:
            if not _equal(_read(setting), value):
                setting.write(value)
        except Exception:  # noqa: BLE001 - a setting that cannot be written back (a deleted directory) stays
            pass


_FLIGHT = threading.Lock()
_SAVED: list[tuple[Setting, Any]] = []  # the settings saved when the first run in flight started
_RUNS_IN_FLIGHT = [0]


def _after_fork_in_child() -> None:
    global _FLIGHT
    _FLIGHT = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextlib.contextmanager
def restored_settings() -> Iterator[None]:
    """Save ``PROCESS_SETTINGS`` before the block and put them back after it (module docstring).

    Reentrant across threads: the first run in flight saves, the last one to end restores, so runs on threads
    never undo each other's settings mid-run; each such group shares one fresh tempfile name generator.
    """
    with _FLIGHT:
        if _RUNS_IN_FLIGHT[0] == 0:
            _SAVED[:] = [(setting, value) for setting in PROCESS_SETTINGS if (value := _read(setting)) is not None]
            _fresh_name_generator()
        _RUNS_IN_FLIGHT[0] += 1
    try:
        yield
    finally:
        with _FLIGHT:
            _RUNS_IN_FLIGHT[0] -= 1
            if _RUNS_IN_FLIGHT[0] == 0:
                _restore(_SAVED)
                _SAVED.clear()
