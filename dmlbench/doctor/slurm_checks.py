"""`doctor --slurm`: the GPU partition's limits and the QOS's, read from the site, against what the
profile will ask (`dmlbench.orchestration.slurm_profile`)."""

from __future__ import annotations

from dmlbench.doctor.checks import ACTION, INFO, OK, Check
from dmlbench.orchestration import slurm_limits, slurm_profile


def slurm_checks() -> list[Check]:
    name, cap = slurm_profile.setting("GPU_PARTITION"), slurm_profile.number("TRAIN_MINUTES")
    partition = slurm_limits.read_partition(name)
    if partition is None:
        return [
            Check(
                "slurm",
                f"partition {name}",
                ACTION,
                f"sinfo does not answer for partition {name!r} here: run doctor on the cluster's login node, or set "
                f"DMLBENCH_SLURM_GPU_PARTITION to the GPU partition; GPU jobs would ask up to {cap} min",
            )
        ]
    limit = "no MaxTime" if partition.max_minutes is None else f"MaxTime {partition.max_minutes} min"
    said = (
        f"{limit}, {partition.nodes} node(s), {partition.gpus_per_node} GPU(s) per node; a GPU job asks at most "
        f"{cap} min (DMLBENCH_SLURM_TRAIN_MINUTES)"
    )
    too_long = partition.max_minutes is not None and cap > partition.max_minutes
    checks = [
        Check(
            "slurm",
            f"partition {name}",
            ACTION if too_long else OK,
            said
            + (
                f": more than the partition allows; export DMLBENCH_SLURM_TRAIN_MINUTES={partition.max_minutes} "
                f"(a job cut at it resumes from its last epoch in the next submission)"
                if too_long
                else ""
            ),
        )
    ]
    if partition.gpus_per_node == 0:
        checks.append(Check("slurm", f"{name} GPUs", ACTION, "its nodes declare no gpu gres: the GPU jobs ask for one"))
    checks += [Check("slurm", "qos", INFO, line) for line in slurm_limits.read_qos()]
    return checks
