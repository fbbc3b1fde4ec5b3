"""Alias of `privselect.apps.ptr` (kept so 0.1 imports work).

``privselect.ptr`` and every submodule (``privselect.ptr.ops``, ``.regression``, ...) are the
same module objects as their ``privselect.apps.ptr`` counterparts, so classes, isinstance checks
and pickles agree whichever path is imported.
"""

import sys as _sys

from ..apps import ptr as _ptr
from ..apps.ptr import *  # noqa: F401,F403
from ..apps.ptr import __all__  # noqa: F401
from ..apps.ptr import baselines, data, gptr, model_selection, ops, regression, tuning  # noqa: F401

for _name in ("baselines", "data", "gptr", "model_selection", "ops", "regression", "tuning"):
    _sys.modules[f"{__name__}.{_name}"] = getattr(_ptr, _name)
