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
"""

from __future__ import annotations

import contextlib
import functools
import random
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["seed_globals", "saved_globals", "mt19937_torch_state", "MT_WORDS"]

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


@functools.lru_cache(maxsize=1)
def _mt19937_init(seed: int) -> np.ndarray:
    """The Mersenne twister's initial state for ``seed`` (Matsumoto, Nishimura 1998, init_genrand); a recurrence."""
    words = [seed & 0xFFFFFFFF]
    for j in range(1, MT_WORDS):
        words.append((1812433253 * (words[-1] ^ (words[-1] >> 30)) + j) & 0xFFFFFFFF)
    return np.array(words, dtype=np.uint64)


@functools.lru_cache(maxsize=4)
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
