"""The fair protocol's GPU jobs (a mixin of the plan, beside `fair_specs`): a search job runs one
round of one method's search (after the round before it was told), a final job
`repetitions_per_job` of its final repetitions. Neither grouping names a file or changes a number:
under SLURM up to `rounds_per_job` rounds in turn go in one submission (a Snakemake group,
`dmlbench.orchestration.slurm_groups`), and a final job's output is the record of its last
repetition, the file that repetition writes under any grouping, so regrouping finished jobs reruns
nothing. A job's spec carries the settings
its folds share once (`base`) and each fold's changes to them (`dmlbench.run_config.delta`)."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError
from dmlbench.run_config import delta


class FairJobs:
    """The search and final jobs of a fair experiment, their files, inputs, triggers and specs."""

    def fair_final_groups(self, experiment: str) -> int:
        """The final repetitions' GPU jobs: `repetitions_per_job` repetitions each."""
        s = self.fair_settings(experiment)
        return -(-s["repetitions"] // s["repetitions_per_job"])

    def fair_group_repetitions(self, experiment: str, group) -> list[int]:
        s = self.fair_settings(experiment)
        return part(
            int(group),
            s["repetitions_per_job"],
            s["repetitions"],
            f"{experiment} has no final job",
            f"in preset {self.name}",
            "repetitions",
        )

    def fair_group_ending(self, experiment: str, last) -> int:
        """The final job whose last repetition is `last` (the rule's wildcard); one that ends no job refused."""
        s = self.fair_settings(experiment)
        size, total, index = s["repetitions_per_job"], s["repetitions"], int(last) // s["repetitions_per_job"]
        ends = [min((i + 1) * size, total) - 1 for i in range(-(-total // size))]
        if int(last) not in ends:
            raise ConfigError(
                f"{experiment}: repetition {last} ends no final job in preset {self.name} "
                f"(jobs of {size} repetitions end at {', '.join(map(str, ends))})"
            )
        return index

    def fair_group_marker(self, experiment, dataset, method, group) -> str:
        """A final job's output: its last repetition's record."""
        last = self.fair_group_repetitions(experiment, group)[-1]
        return self.fair_repetition_marker(experiment, dataset, method, last)

    def fair_group_runs(self, experiment, dataset, method, group) -> list[str]:
        """The run folders of a final job's fold trainings (its repetitions')."""
        return [
            path
            for r in self.fair_group_repetitions(experiment, group)
            for path in self.fair_repetition_runs(experiment, dataset, method, r)
        ]


def part(index: int, size: int, total: int, missing: str, where: str, unit: str) -> list[int]:
    """Part `index` of 0..total−1 cut into parts of `size` (the last may hold fewer); an index
    outside the parts refused: "<missing> <index> <where> (<parts> of <size> <unit>)"."""
    parts = -(-total // size)
    if not 0 <= index < parts:
        raise ConfigError(f"{missing} {index} {where} ({parts} of {size} {unit})")
    return list(range(index * size, min((index + 1) * size, total)))


def _compact(base: dict, fold: dict) -> dict:
    """A fold job with its settings as changes to `base` (whole where their keys differ)."""
    found = delta.changes(base, fold["run"])
    return fold if found is None else {**{k: v for k, v in fold.items() if k != "run"}, "changes": found}
