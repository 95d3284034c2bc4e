"""CPU-exact reproductions and loss-side measurements: no dataset, no training.

Analyses are named here and imported only when one runs, so that validating a config (every
Snakemake invocation) does not pay for importing torch.
"""

from pathlib import Path

from dmlbench.core.registry import Registry

ANALYSES = Registry("analysis")
for _name in ("pair_weights", "dro_identities", "loss_timing", "triplet_updates", "fastap_gradient"):
    ANALYSES.register_lazy(_name, f"dmlbench.analysis.{_name}:run")


def run(name: str, output_dir: Path, spec: dict) -> None:
    """Run analysis `name`, writing its summary, data and figure into `output_dir`."""
    ANALYSES.get(name)(output_dir, spec)
