"""The PRV accountant's discretisation as a public interface, for packages that reuse its pieces.

The K-mixture bound ([`privselect.selection.bounds.mixture`][privselect.selection.bounds.mixture]) discretises a run's
privacy-loss laws once and mixes the k-fold compositions in the frequency domain, with the
accountant's proven error terms (Gopi, Lee, Wutschitz 2021, Alg. 2 and eq. (8)). It reads them
through these names only, so that the accountant's internals can move without breaking it:

* `readable_losses`, `epsilon_scale`: the mechanism's loss laws, and the eps scale that sizes the mesh;
* `find_tails`, `planned_mesh`, `discretise`, `Cells`: truncation and discretisation of one loss law;
* `coupling`, `window`, `tail_bound`, `log_mgf_cells`, `COARSE_ORDERS`: GLW's coupling width, the
  FFT window and the Chernoff bound on the wrap-around, with the orders searched;
* `PRVCurve`: the curve of a discretised composed law;
* `UNIT_ROUNDOFF`, `FFT_STAGE_ULPS`, `SPECTRUM_FLOOR`, `MAX_COMPOSITIONS`, `MAX_STEP_LOSS`: the
  floating-point constants its bounds are stated with.
"""

from __future__ import annotations

from .accountant import readable_losses
from .bounds import _COARSE_ORDERS, _coupling, _epsilon_scale, _log_mgf_cells, _planned_mesh, _tail_bound, _window
from .compose import _FFT_STAGE_ULPS, _SPECTRUM_FLOOR, MAX_COMPOSITIONS, MAX_STEP_LOSS
from .curve import PRVCurve
from .discretise import _U, _Cells, _discretise, _find_tails

__all__ = ["COARSE_ORDERS", "FFT_STAGE_ULPS", "SPECTRUM_FLOOR", "UNIT_ROUNDOFF", "MAX_COMPOSITIONS", "MAX_STEP_LOSS",
           "PRVCurve", "Cells", "coupling", "discretise", "epsilon_scale", "find_tails", "log_mgf_cells",
           "planned_mesh", "tail_bound", "window", "readable_losses"]

#: Chernoff orders searched on the coarse law (a heuristic; every order gives a valid bound).
COARSE_ORDERS = _COARSE_ORDERS
#: Per radix stage relative error of pocketfft's butterflies, in units of the unit roundoff.
FFT_STAGE_ULPS = _FFT_STAGE_ULPS
#: Spectrum entries below this magnitude are dropped (their mass is charged to delta).
SPECTRUM_FLOOR = _SPECTRUM_FLOOR
#: Unit roundoff of IEEE double.
UNIT_ROUNDOFF = _U
#: One law's cells: pmf on the mesh, its offset, truncated tails and rounding bounds.
Cells = _Cells
coupling = _coupling
discretise = _discretise
epsilon_scale = _epsilon_scale
find_tails = _find_tails
log_mgf_cells = _log_mgf_cells
planned_mesh = _planned_mesh
tail_bound = _tail_bound
window = _window
