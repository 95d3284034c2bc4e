"""The fair protocol's GPU jobs (a mixin of the plan, beside `fair_specs`): a search job runs
`rounds_per_job` rounds of one method's search in turn, a final job `repetitions_per_job` of its
final repetitions; neither setting changes a number (the same fold trainings, in the same order of
asks and tells). A job's spec carries the settings its folds share once (`base`) and each fold's
changes to them (`dmlbench.run_config.delta`)."""

from __future__ import annotations

from dmlbench.core.errors import ConfigError
from dmlbench.run_config import delta
from dmlbench.training import run_folder


class FairJobs:
    """The search and final jobs of a fair experiment, their files, inputs, triggers and specs."""

    def fair_stages(self, experiment: str) -> int:
        """The search's GPU jobs: `rounds_per_job` rounds each, run in turn (the last may hold fewer)."""
        return -(-self.fair_rounds(experiment) // self.fair_settings(experiment)["rounds_per_job"])

    def fair_stage_rounds(self, experiment: str, stage) -> list[int]:
        return part(int(stage), self.fair_settings(experiment)["rounds_per_job"], self.fair_rounds(experiment),
                    f"{experiment} has no search job", f"in preset {self.name}", "rounds")

    def fair_final_groups(self, experiment: str) -> int:
        """The final repetitions' GPU jobs: `repetitions_per_job` repetitions each."""
        s = self.fair_settings(experiment)
        return -(-s["repetitions"] // s["repetitions_per_job"])

    def fair_group_repetitions(self, experiment: str, group) -> list[int]:
        s = self.fair_settings(experiment)
        return part(int(group), s["repetitions_per_job"], s["repetitions"], f"{experiment} has no final job",
                    f"in preset {self.name}", "repetitions")

    def fair_stage_marker(self, experiment, dataset, method, stage) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/search/stage{stage}.json"

    def fair_group_marker(self, experiment, dataset, method, group) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/final/group{group}.json"

    def fair_stage_runs(self, experiment, dataset, method, stage) -> list[str]:
        """The run folders of a search job's fold trainings (its rounds')."""
        return [path for r in self.fair_stage_rounds(experiment, stage)
                for path in self.fair_round_runs(experiment, dataset, method, r)]

    def fair_group_runs(self, experiment, dataset, method, group) -> list[str]:
        """The run folders of a final job's fold trainings (its repetitions')."""
        return [path for r in self.fair_group_repetitions(experiment, group)
                for path in self.fair_repetition_runs(experiment, dataset, method, r)]

    def fair_stage_trigger(self, experiment, dataset, method, stage) -> str:
        """The rerun trigger of a search job: the fold trainings' fingerprint and its rounds' slots."""
        slots = [t for r in self.fair_stage_rounds(experiment, stage) for t in self.fair_round_slots(experiment, r)]
        return f"{self.fair_fingerprint(experiment, dataset, method)} slots {','.join(map(str, slots))}"

    def fair_stage_spec(self, experiment, dataset, method, stage) -> dict:
        """A search job: its rounds in turn, each with the file that records what its slots were
        told; the settings the folds share once (`base`), each fold's as changes to them."""
        rounds = [self.fair_round_spec(experiment, dataset, method, r)
                  for r in self.fair_stage_rounds(experiment, stage)]
        base = rounds[0]["ask"]["run"]
        return {"ask": rounds[0]["ask"], "space": rounds[0]["space"], "base": base,
                "rounds": [{"output": self.fair_round_marker(experiment, dataset, method, r),
                            "trials": [{**t, "folds": [_compact(base, f) for f in t["folds"]]} for t in spec["trials"]]}
                           for r, spec in zip(self.fair_stage_rounds(experiment, stage), rounds)]}

    def fair_group_spec(self, experiment, dataset, method, group) -> dict:
        """A final job: its repetitions, each with the file that records its folds' results; the
        settings the folds share once (`base`), each fold's as changes to them."""
        base = run_folder.numbers_and_side(self._fair_base(experiment, dataset, method))[0]
        return {"space": self._space_json(method), "base": base, "repetitions": [
            {"output": self.fair_repetition_marker(experiment, dataset, method, r),
             "folds": [_compact(base, f) for f in self.fair_repetition_spec(experiment, dataset, method, r)["folds"]]}
            for r in self.fair_group_repetitions(experiment, group)]}

    def fair_stage_inputs(self, experiment, dataset, method, stage) -> list[str]:
        """The data, and the search job before (its rounds told: the sequencing of the search)."""
        s = int(stage)
        before = [self.fair_stage_marker(experiment, dataset, method, s - 1)] if s > 0 else []
        return before + self._fold_data_inputs(experiment, dataset, method)


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
