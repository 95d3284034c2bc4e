"""Figures drawn from the outputs of runs and analyses, and the drawing every figure shares
(`canvas`). `FIGURES` names the extra figures an experiment may ask for (`figures:` in the
catalogue), drawn from what its runs record; they are imported only when drawn."""

from dmlbench.core.registry import Registry

FIGURES = Registry("figure")
FIGURES.register_lazy("triplet_scatter", "dmlbench.plots.triplets:triplet_scatter")
FIGURES.register_lazy("triplet_moves", "dmlbench.plots.triplets:triplet_moves")
FIGURES.register_lazy("trunk_ranking", "dmlbench.plots.ranking:trunk_ranking")
