"""The suite's fair comparison (`suite.fair`): every method under one protocol, its own parameters
tuned on validation folds only, the best setting retrained and tested with confidence intervals.
docs/fair-table.md states the protocol; the folds are `dmlbench.data.folds`."""
