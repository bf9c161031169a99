import os
import sys

from hypothesis import HealthCheck, settings

# CI runs a fixed, repeatable set of examples; locally, hypothesis explores.
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Hypothesis's pytest plugin wraps a parametrized test's settings once per parameter, and
# reading a setting walks that chain: several hundred parameters need a deeper stack.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
