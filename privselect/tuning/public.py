"""A public prior: a search-space law fit to public information before the selection.

[`from_public`][privselect.tuning.public.from_public] turns an Optuna study run on public or proxy data, a previous
result, or samples the user gives into one [`PublicPrior`][privselect.tuning.public.PublicPrior] per
hyperparameter: a Gaussian kernel density (Parzen window; Bergstra et al. 2011 use the same estimator in TPE) of the
public samples in the coordinates of the declared law (log coordinates for ``LogUniform``), truncated to its range
and mixed with it (weight ``floor``), or, for a finite law, the public frequencies mixed with it.

It costs no privacy. The law is fit once, before the selection, from information that is not the private data;
every run then draws its candidate from it with the run's own generator, i.i.d. and independently of the data, which
is exactly what the i.i.d. selection theorems assume of the search space's law (Papernot, Steinke 2022, Thm 2;
Koskela, Redberg, Wang 2024, Thm 5.2: they hold for any fixed law of the candidates). The certificate is unchanged.
What counts as public is the user's declaration: data that is not the private data set (a public or proxy set),
or the released output of an earlier certified selection on other data. A result released from the SAME private
data is not free: the new selection composes with it (docs/adaptive.md, "A public prior").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ..selection.laws import Distribution, LogUniform, Uniform

__all__ = ["PublicPrior", "from_public"]

#: Smallest bandwidth, as a fraction of the (log) range: the density stays smooth with few samples.
MIN_BANDWIDTH = 0.02


@dataclass(frozen=True, eq=False)
class PublicPrior(Distribution):
    """The law of one hyperparameter fit to public samples, refining the declared law ``base``.

    Continuous ``base`` (Uniform, LogUniform): with probability ``floor`` a draw from ``base``, else a public sample
    (uniformly chosen) plus Gaussian noise of sd ``bandwidth`` (a fraction of the (log) range), truncated to the range.
    Finite ``base``: probabilities ``floor * base + (1 - floor) * public frequencies``.
    """

    base: Distribution
    points: tuple  # public samples: coordinates in [0, 1] (continuous base) or values (finite base)
    bandwidth: float
    floor: float

    @property
    def suggest_law(self) -> Distribution:
        """A study's ``suggest_*`` names the declared range: ``base``."""
        return self.base

    def _bounds(self) -> tuple[float, float, bool]:
        base = self.base
        assert isinstance(base, (Uniform, LogUniform))  # from_public builds a continuous prior on these only
        log = isinstance(base, LogUniform)
        return (math.log(base.low), math.log(base.high), True) if log else (float(base.low), float(base.high), False)

    def support(self) -> tuple[tuple[Any, float], ...] | None:
        finite = self.base.support()
        if finite is None:
            return None
        counts = {value: 0 for value, _ in finite}
        for value in self.points:
            counts[value] += 1
        total = len(self.points)
        return tuple((value, self.floor * p + (1 - self.floor) * counts[value] / total) for value, p in finite)

    def sample(self, rng: np.random.Generator) -> Any:
        finite = self.support()
        if finite is not None:
            index = int(rng.choice(len(finite), p=np.array([p for _, p in finite]) / sum(p for _, p in finite)))
            return finite[index][0]
        if rng.random() < self.floor:
            return self.base.sample(rng)
        centre = float(self.points[int(rng.integers(len(self.points)))])
        lo_cdf, hi_cdf = special.ndtr(-centre / self.bandwidth), special.ndtr((1 - centre) / self.bandwidth)
        u = float(special.ndtri(lo_cdf + rng.random() * (hi_cdf - lo_cdf)))  # truncated normal by inversion
        t = min(max(centre + self.bandwidth * u, 0.0), 1.0)
        low, high, log = self._bounds()
        value = low + t * (high - low)
        return float(min(max(math.exp(value), math.exp(low)), math.exp(high))) if log else float(value)

    def density(self, values: np.ndarray) -> np.ndarray:
        """Density of a continuous prior at ``values`` (per unit of the (log) coordinate scaled to [0, 1])."""
        low, high, log = self._bounds()
        v = np.asarray(values, dtype=float)
        t = ((np.log(v) if log else v) - low) / (high - low)
        c = np.asarray(self.points, dtype=float)[None, :]
        h = self.bandwidth
        mass = special.ndtr((1 - c) / h) - special.ndtr(-c / h)
        kernels = np.exp(-0.5 * ((t[..., None] - c) / h) ** 2) / (math.sqrt(2 * math.pi) * h) / mass
        return self.floor + (1 - self.floor) * kernels.mean(axis=-1)

    def __repr__(self) -> str:
        return (f"PublicPrior(base={self.base!r}, {len(self.points)} public samples, bandwidth={self.bandwidth:.3g}, "
                f"floor={self.floor:g})")


def _samples(source: Any, top: float) -> list[Mapping[str, Any]]:
    """The public samples: the best ``top`` fraction of an Optuna study's completed trials, a result's best params,
    a list of params dicts, or a dict of name -> values."""
    trials = getattr(source, "trials", None)
    if trials is not None and hasattr(source, "direction") and not isinstance(source, Mapping):
        complete = [t for t in trials if getattr(getattr(t, "state", None), "name", "") == "COMPLETE"
                    and t.value is not None and math.isfinite(t.value)]
        if not complete:
            raise ValueError("from_public: the study has no completed trial with a finite value")
        reverse = getattr(source.direction, "name", str(source.direction)).upper() == "MAXIMIZE"
        complete.sort(key=lambda t: t.value, reverse=reverse)
        return [t.params for t in complete[:max(1, math.ceil(top * len(complete)))]]
    best = getattr(source, "best_params", None)
    if isinstance(best, Mapping):
        return [best]
    if isinstance(source, Mapping):
        columns = {name: list(values) for name, values in source.items()}
        sizes = {len(v) for v in columns.values()}
        if len(sizes) != 1 or 0 in sizes:
            raise ValueError("from_public: a dict of samples needs one non-empty list of values per hyperparameter, "
                             "all of the same length")
        return [dict(zip(columns, row)) for row in zip(*columns.values())]
    if isinstance(source, Sequence) and not isinstance(source, str) and source and \
            all(isinstance(s, Mapping) for s in source):
        return list(source)
    raise TypeError("from_public needs an Optuna study run on public or proxy data, a released result (best_params), "
                    f"a list of params dicts or a dict name -> values; got {type(source).__name__}")


def _coordinates(name: str, law: Distribution, values: list[Any]) -> np.ndarray:
    if isinstance(law, LogUniform):
        low, high, v = math.log(law.low), math.log(law.high), np.log(np.asarray(values, dtype=float))
    else:
        low, high, v = float(law.low), float(law.high), np.asarray(values, dtype=float)  # type: ignore[attr-defined]
    t = (v - low) / (high - low)
    if not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t > 1):
        raise ValueError(f"from_public: public samples of {name!r} lie outside its declared law {law!r}")
    return t


def from_public(source: Any, space: Mapping[str, Distribution], *, top: float = 0.25, bandwidth: float | None = None,
                floor: float = 0.1) -> dict[str, Distribution]:
    """A search space fit to public information: ``{name: PublicPrior}`` over the declared ``space``.

    ``source``: an Optuna study run on public or proxy data (its best ``top`` fraction of completed trials), a
    released result (its ``best_params``), a list of params dicts, or a dict ``name -> values``. ``space``: the
    declared laws (ranges and scales; a hyperparameter without public samples keeps its law). ``bandwidth``: the
    kernel's sd as a fraction of the (log) range (default: Scott's rule, at least 0.02). ``floor``: the mass kept
    on the declared law, so that no region is ruled out. The returned dict is a search space for
    ``PrivateTuner(search_space=...)`` and ``PrivateStudy(search_space=...)``; it costs no privacy (the i.i.d.
    certificate applies unchanged), provided the source is public (module docstring).
    """
    if not isinstance(space, Mapping) or not space or not all(isinstance(law, Distribution) for law in space.values()):
        raise TypeError("from_public: space must be a non-empty dict of privselect.space laws (the declared ranges)")
    if not (0 < top <= 1):
        raise ValueError(f"from_public: top must lie in (0, 1], got {top!r}")
    if not (0 < floor <= 1):
        raise ValueError(f"from_public: floor must lie in (0, 1] (some mass stays on the declared law), got {floor!r}")
    if bandwidth is not None and not (math.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"from_public: bandwidth must be a positive fraction of the range, got {bandwidth!r}")
    samples = _samples(source, top)
    out: dict[str, Distribution] = {}
    for name, law in space.items():
        values = [s[name] for s in samples if name in s]
        if not values:
            out[name] = law
            continue
        finite = law.support()
        if finite is not None:
            allowed = {value for value, _ in finite}
            if any(v not in allowed for v in values):
                raise ValueError(f"from_public: public samples of {name!r} take values outside its declared law {law!r}")
            out[name] = PublicPrior(law, tuple(values), 0.0, float(floor))
            continue
        if not isinstance(law, (Uniform, LogUniform)):
            raise ValueError(f"from_public: {name!r} has law {law!r}; a public prior is fit to Uniform, LogUniform "
                             "or a finite law")
        t = _coordinates(name, law, values)
        h = bandwidth if bandwidth is not None else \
            max(1.06 * float(np.std(t)) * t.size ** -0.2 if t.size > 1 else 0.1, MIN_BANDWIDTH)
        out[name] = PublicPrior(law, tuple(float(x) for x in t), float(h), float(floor))
    return out
