"""Alias of [`privselect.apps.demo`][privselect.apps.demo] (kept so 0.1 imports work)."""

from .apps.demo import *  # noqa: F401,F403
from .apps.demo import CLASSES, DELTA, EPOCHS, MEAN_K, NOISE_MULTIPLIER, SAMPLING_RATE, SCORE_NOISE  # noqa: F401
from .apps.demo import load_digits_split, run_demo  # noqa: F401
