"""The CF accountant: `CFAccountant` (the numerics' options) and `CF`, its `Accountant` (registered as "cf")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...mechanisms import Mechanism
from ..base import LossAccountant, register_accountant
from ..profile import DirectionalCurve, PrivacyProfile
from .components import atomic, closed_form, readable_losses, sampled_steps
from .curve import CFCurve
from .options import CFOptions


@dataclass(frozen=True)
class CFAccountant(CFOptions):
    """Characteristic-function accountant (Zhu, Dong, Wang 2022) with certified, added error.

    Parameters
    ----------
    rel_tol:
        Target size of the aliasing and truncation errors relative to delta; sizes the
        integration grids (the reported error is computed, not assumed).
    max_grid_points:
        Cap on trapezoid points per integration line; if the truncation target needs more,
        the (larger) certified truncation error is reported instead.
    quadrature_safety:
        Factor applied to the two-rule difference used as the error estimate of the
        quadrature phi of subsampled mechanisms.
    max_atoms:
        Cap on enumerated atoms of purely atomic parts; lighter atoms are dropped and their
        mass is added to the upper bound.
    max_quadrature_nodes:
        Cap on the quadrature nodes of one subsampled step's phi at v = 1, checked when the profile is
        built (the cost estimate): past it the accountant declines with ``CertificationError``. A
        Gaussian base with mu = 1/sigma needs about 20 mu^2 of them (mu = 30: 2e4; mu = 100: 2.2e5),
        and every phi value on every integration line costs that many complex exponentials.
    max_work:
        Cap on (grid points x quadrature nodes) per integration line for subsampled
        mechanisms; beyond it the grid is shortened and the certified truncation error grows
        (relevant for one or a few subsampled steps, whose phi decays slowly).
    max_memory:
        Bytes one build may allocate (estimated before allocating); past it it declines. Default 2 GB.

    Examples
    --------
    >>> import privselect as ps
    >>> prof = CFAccountant().profile(ps.Gaussian(1.0))
    >>> round(prof.delta(1.0), 10)
    0.1269367375
    """

    # -- profile ---------------------------------------------------------------------------------

    def profile(self, mechanism: Mechanism) -> PrivacyProfile:
        """Certified privacy profile of ``mechanism``: max over the add and remove directions."""
        losses = readable_losses(mechanism)
        remove = tuple((d.remove, k) for d, k in losses)
        if all(d.is_symmetric for d, _ in losses):
            curves: tuple[DirectionalCurve, ...] = (CFCurve("both", remove, self),)
        else:
            add = tuple((d.add, k) for d, k in losses)
            curves = (CFCurve("remove", remove, self), CFCurve("add", add, self))
        metadata: tuple[tuple[str, Any], ...] = (
            ("rel_tol", self.rel_tol),
            ("max_grid_points", self.max_grid_points),
            ("quadrature_safety", self.quadrature_safety),
            ("max_atoms", self.max_atoms),
            ("max_work", self.max_work),
            ("max_quadrature_nodes", self.max_quadrature_nodes),
            ("max_memory", self.max_memory),
            ("inversion", "shifted contour, saddle-point damping (accounting-cf.md §7)"),
        )
        return PrivacyProfile(
            curves=curves,
            accountant="cf",
            mechanism=mechanism,
            description="characteristic-function accountant (Zhu, Dong, Wang 2022)",
            metadata=metadata,
        )


def cf_profile(mechanism: Mechanism, **options: Any) -> PrivacyProfile:
    """``CFAccountant(**options).profile(mechanism)``."""
    return CFAccountant(**options).profile(mechanism)


@register_accountant("cf")
class CF(LossAccountant, engine=CFAccountant, label="cf", reader=readable_losses):
    """Characteristic-function accountant (Zhu, Dong, Wang 2022); options go to ``CFAccountant``."""

    name = "cf"

    def closed_form(self, mechanism: Mechanism) -> bool:
        """Whether ``mechanism`` (which this accountant supports) has a closed-form characteristic
        function: then an eps(delta) query costs milliseconds at CF's full precision."""
        return closed_form(mechanism)

    def atomic(self, mechanism: Mechanism) -> bool:
        """Whether every component's privacy loss is purely atomic (``cf.atomic``): delta(eps) is then
        an exact sum over atoms, cheap for long eps vectors."""
        return atomic(mechanism)

    def sampled_steps(self, mechanism: Mechanism) -> float:
        """Expected number of steps in which a record takes part (``cf.sampled_steps``): below about
        1, CF's grids are long and its bracket loose."""
        return sampled_steps(mechanism)
