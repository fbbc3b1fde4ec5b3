"""Shared test configuration: the hypothesis profiles of every property and fuzz test.

``ci`` (default) is derandomised, so a CI run is reproducible; ``PRIVSELECT_FUZZ=long`` draws
2000 fresh random examples per test (what the fuzzing counts in docs/reliability.md used).
``fast`` (derandomised, 25 examples) is what the fast loop ``-m "not slow"`` loads unless
``PRIVSELECT_FUZZ`` names a profile: every property test still runs, at a reduced size.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("fast", max_examples=25, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("PRIVSELECT_FUZZ", "ci"))


def pytest_configure(config):
    """The fast loop (a marker expression deselecting ``slow``) runs the property tests at the fast size."""
    if "PRIVSELECT_FUZZ" not in os.environ and "not slow" in (config.option.markexpr or ""):
        settings.load_profile("fast")
