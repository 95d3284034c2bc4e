"""CPU-exact reproductions and loss-side measurements: no dataset, no training.

Analyses are named here and imported only when one runs, so that validating a config (every
Snakemake invocation) does not pay for importing torch.
"""

from importlib import import_module
from pathlib import Path

ANALYSES = {"pair_weights": "dmlbench.analysis.pair_weights",
            "dro_identities": "dmlbench.analysis.dro_identities",
            "loss_timing": "dmlbench.analysis.loss_timing",
            "triplet_updates": "dmlbench.analysis.triplet_updates",
            "fastap_gradient": "dmlbench.analysis.fastap_gradient"}


def run(name: str, output_dir: Path, spec: dict) -> None:
    """Run analysis `name`, writing its summary, data and figure into `output_dir`."""
    import_module(ANALYSES[name]).run(output_dir, spec)
