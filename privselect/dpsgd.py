"""Alias of [`privselect.apps.dpsgd`][privselect.apps.dpsgd] (kept so 0.1 imports work)."""

from .apps.dpsgd import *  # noqa: F401,F403
from .apps.dpsgd import __all__  # noqa: F401
