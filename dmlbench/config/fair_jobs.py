"""The fair protocol's GPU jobs (a mixin of the plan, beside `fair_specs`): a search job runs
`rounds_per_job` rounds of one method's search in turn, a final job `repetitions_per_job` of its
final repetitions; neither setting changes a number (the same fold trainings, in the same order of
asks and tells). A job's spec carries the settings its folds share once (`base`) and each fold's
changes to them (`dmlbench.run_config.delta`)."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError
from dmlbench.run_config import delta


class FairJobs:
    """The search and final jobs of a fair experiment, their files, inputs, triggers and specs."""

    def fair_stages(self, experiment: str) -> int:
        """The search's GPU jobs: `rounds_per_job` rounds each, run in turn (the last may hold fewer)."""
        return -(-self.fair_rounds(experiment) // self.fair_settings(experiment)["rounds_per_job"])

    def fair_stage_rounds(self, experiment: str, stage) -> list[int]:
        return part(
            int(stage),
            self.fair_settings(experiment)["rounds_per_job"],
            self.fair_rounds(experiment),
            f"{experiment} has no search job",
            f"in preset {self.name}",
            "rounds",
        )

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

    def fair_stage_marker(self, experiment, dataset, method, stage) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/search/stage{stage}.json"

    def fair_group_marker(self, experiment, dataset, method, group) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/final/group{group}.json"

    def fair_stage_runs(self, experiment, dataset, method, stage) -> list[str]:
        """The run folders of a search job's fold trainings (its rounds')."""
        return [
            path
            for r in self.fair_stage_rounds(experiment, stage)
            for path in self.fair_round_runs(experiment, dataset, method, r)
        ]

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
