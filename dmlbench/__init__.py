"""dmlbench: a benchmark reproduction suite for deep metric learning."""

import os

__version__ = "0.1.0"

# OpenMP threads waiting for work sleep rather than spin. The runtime reads this once, when torch
# loads it, so it is set here: every dmlbench process, the Snakefile (whose jobs inherit it) and
# the tests import dmlbench first. Where processes side by side want more threads than there are
# cores (CPU presets, the test suite), spinning threads take the cores from those that compute:
# several times the CPU seconds for the same numbers (`python -m benchmarks.openmp_wait`). A value
# the user set stands; the numbers do not depend on it (tests/test_openmp_wait.py).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
