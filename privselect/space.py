"""Alias of [`privselect.tuning.space`][privselect.tuning.space] (kept so ``from privselect.space import Choice`` works)."""

from .tuning.space import *  # noqa: F401,F403
from .tuning.space import __all__  # noqa: F401
