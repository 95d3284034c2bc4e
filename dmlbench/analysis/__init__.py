"""CPU-exact reproductions: numerical consequences of the papers' formulas, no dataset needed."""

from dmlbench.analysis import pair_weights

ANALYSES = {"pair_weights": pair_weights.run}
