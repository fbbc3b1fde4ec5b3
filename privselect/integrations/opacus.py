"""Opacus (PyTorch) trainers: the description of one run from Opacus's own numbers, and its seeding.

Two things connect an Opacus training loop to the tuner (docs/trainers.md has the complete loop):

* **what one run is**: [`description`][privselect.integrations.opacus.description] builds
  ``Gaussian(noise_multiplier).poisson_subsample(q).compose(steps)`` counted exactly as Opacus
  counts (Opacus 1.x, ``PrivacyEngine.make_private`` with ``poisson_sampling=True``, the
  default): the rate is ``q = 1 / len(data_loader)`` of the loader handed to ``make_private``,
  and the Poisson ``DPDataLoader`` it returns yields ``int(1 / q)`` batches per epoch (its
  ``UniformWithReplacementSampler``), so ``steps = epochs * int(1 / q)``. ``int(1 / q)`` is
  ``len(data_loader)`` except where floating point rounds ``1 / (1 / L)`` below L (L = 93, 99,
  105, ...: one step fewer per epoch), and Opacus's accountant counts the steps taken. There,
  Opacus's accountant records the rate ``1 / len(DPDataLoader)`` (1/92 for L = 93), above the
  rate its sampler draws with (1/93): a safe overstatement; the description has the true rate.
* **where its randomness comes from**: [`generators`][privselect.integrations.opacus.generators]
  turns the run's numpy ``rng`` into the two ``torch.Generator`` objects Opacus draws from: the
  optimizer's ``noise_generator`` and the ``generator`` of the data loader, which the Poisson
  ``DPDataLoader`` inherits. A CPU generator is a Mersenne twister whose ``manual_seed`` keeps
  only the low 32 bits of the seed (seeds ``s`` and ``s + 2**32`` give the same stream: 2**32
  guesses replay a run), so privselect sets its whole state, 624 words of 32 bits drawn from
  ``rng``; a CUDA (or other Philox) generator takes a 64-bit seed drawn from ``rng``.

The run then depends on ``rng`` alone: on CPU the same ``rng`` state gives a bitwise-identical
``state_dict``. The generators are the run's secret: never return them, the optimizer (its
``.generator``), the data loader, or a module that references any of them; the release guard
refuses each ([`privselect.tuning.guard`][privselect.tuning.guard]). Return the module's
weights: [`weights`][privselect.integrations.opacus.weights] (``return score, ps_opacus.weights(net)``),
never the module, whose parameters keep Opacus's per-sample gradients (``grad_sample``).

torch and opacus are imported only when a generator is made (install ``privselect[opacus]``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import _validation as check
from ..mechanisms import Mechanism, dpsgd, uncertified_sampling_message
from ..tuning.globalstate import MT_WORDS, mt19937_torch_state

__all__ = ["description", "sample_rate_of", "steps_per_epoch", "generator", "generators", "OpacusGenerators", "weights"]



def sample_rate_of(data_loader: Any) -> float:
    """Opacus's sample rate: ``data_loader.sample_rate`` of a ``DPDataLoader``, else ``1 / len(data_loader)``.

    The second is what ``PrivacyEngine.make_private`` computes from the loader you hand it.
    """
    rate = getattr(data_loader, "sample_rate", None)
    if rate is not None:
        return check.half_open_unit("data_loader.sample_rate", rate)
    batches = check.positive_int("len(data_loader)", len(data_loader))
    return 1 / batches


def steps_per_epoch(data_loader: Any) -> int:
    """Batches per epoch of the Poisson ``DPDataLoader`` that Opacus makes of ``data_loader``: ``int(1 / q)``.

    For a ``DPDataLoader`` (after ``make_private``) this is ``len(data_loader)``.
    """
    if getattr(data_loader, "sample_rate", None) is not None:
        return check.positive_int("len(data_loader)", len(data_loader))
    return int(1 / sample_rate_of(data_loader))


def description(noise_multiplier: float, *, sample_rate: float | None = None, data_loader: Any = None,
                epochs: int | None = None, steps: int | None = None, batch_size: int | None = None,
                dataset_size: int | None = None, drop_last: bool = False, poisson_sampling: bool = True) -> Mechanism:
    """The mechanism of one Opacus training run (Abadi et al. 2016 DP-SGD, Poisson sampling, add/remove).

    Give the sampling as ``sample_rate``, or ``data_loader`` (the loader handed to ``make_private``,
    or the ``DPDataLoader`` it returned), or ``batch_size`` and ``dataset_size`` (public numbers
    describing that loader, no loader needed: q = 1 / len(loader), len(loader) = ceil(N / B), or
    floor(N / B) with ``drop_last=True``, as ``make_private`` computes it); and ``epochs`` or ``steps``
    (optimizer steps taken). With a loader (or its sizes) and ``epochs``, ``steps = epochs *
    steps_per_epoch``, as Opacus's accountant counts them; with ``sample_rate`` and ``epochs``,
    ``steps = epochs * int(1 / q)``.

    ``poisson_sampling`` is ``make_private``'s keyword (default ``True``): with ``False``, Opacus
    keeps the loader's own batches (shuffled or sequential, fixed sizes), which no certified
    bound describes, so it is refused (never the Poisson numbers for it).
    """
    if poisson_sampling is not True:
        if poisson_sampling is False:
            raise ValueError("poisson_sampling=False: make_private then keeps the data loader's shuffled or "
                             "sequential fixed-size batches; " + uncertified_sampling_message("that sampler"))
        raise TypeError(f"poisson_sampling must be True or False, got {poisson_sampling!r}")
    sizes = (batch_size, dataset_size)
    if (sizes[0] is None) != (sizes[1] is None):
        raise ValueError("give batch_size and dataset_size together (the loader's batch size and the public number "
                         "of records)")
    if (sample_rate is not None) + (data_loader is not None) + (batch_size is not None) != 1:
        raise ValueError("give exactly one of sample_rate or data_loader, or batch_size with dataset_size")
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of epochs or steps")
    if data_loader is not None:
        rate, per_epoch = sample_rate_of(data_loader), steps_per_epoch(data_loader)
    elif batch_size is not None:
        b, n = check.positive_int("batch_size", batch_size), check.positive_int("dataset_size", dataset_size)
        batches = n // b if drop_last else -(-n // b)
        if batches < 1:
            raise ValueError(f"drop_last=True with batch_size={b} > dataset_size={n} leaves no batch")
        rate = 1 / batches
        per_epoch = int(1 / rate)  # what Opacus's Poisson loader yields per epoch (int(1 / (1/93)) = 92)
    else:
        rate = check.half_open_unit("sample_rate", sample_rate)
        per_epoch = int(1 / rate)
    count = check.positive_int("steps", steps) if steps is not None else check.positive_int("epochs", epochs) * per_epoch
    return dpsgd(noise_multiplier=noise_multiplier, sample_rate=rate, steps=count)


class OpacusGenerators(NamedTuple):
    """The two generators of an Opacus run: ``noise`` for ``make_private(noise_generator=...)``, ``sampler``
    for ``DataLoader(..., generator=...)`` (the Poisson ``DPDataLoader`` inherits it)."""

    noise: Any
    sampler: Any


def generator(rng: np.random.Generator, device: Any = "cpu") -> Any:
    """A ``torch.Generator`` on ``device`` whose whole state is drawn from ``rng``.

    CPU: the Mersenne twister's 624 state words (19,968 bits) come from ``rng``; ``manual_seed``
    would keep 32 bits only. Other devices (CUDA's Philox): ``manual_seed`` with 64 bits from ``rng``.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be the run's numpy.random.Generator, got {type(rng).__name__}")
    torch = _torch()
    device = torch.device(device)
    made = torch.Generator(device=device)
    if device.type != "cpu":
        made.manual_seed(int(rng.integers(0, 2**64, dtype=np.uint64)))
        return made
    made.set_state(mt19937_torch_state(torch, rng.integers(0, 2**32, size=MT_WORDS, dtype=np.uint64)))
    return made


def generators(rng: np.random.Generator, device: Any = "cpu") -> OpacusGenerators:
    """Opacus's noise generator (on ``device``, where the parameters are) and the sampler's (CPU), from ``rng``.

    Drawn in this order: the noise generator, then the sampler's. Draw anything else (the
    initial weights) from further generators: ``generator(rng)``.
    """
    return OpacusGenerators(noise=generator(rng, device), sampler=generator(rng, "cpu"))


def weights(module: Any) -> dict[str, Any]:
    """What to release of a trained module: its ``state_dict`` as fresh plain tensors (no autograd, no attributes).

    ``return score, ps_opacus.weights(net)``. Opacus's ``GradSampleModule`` wrapper is unwrapped
    (its names lose the ``_module.`` prefix), so ``net.load_state_dict`` takes the result. The
    module itself is never released: after ``make_private`` its parameters keep ``grad_sample``
    (per-sample gradients, from which the records of the last batch are rebuilt) and its hooks
    refer to the optimizer and its generator.
    """
    torch = _torch()
    inner = getattr(module, "_module", module) if type(module).__name__ == "GradSampleModule" else module
    if not isinstance(inner, torch.nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    with torch.no_grad():
        return {name: value.detach().clone() for name, value in inner.state_dict().items()}


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("the Opacus integration needs torch and opacus: pip install 'privselect[opacus]'") from None
    return torch
