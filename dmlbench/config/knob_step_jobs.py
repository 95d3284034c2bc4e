"""What the Snakemake rules ask of a plan for the knob experiment's steps (a part of `Jobs`): one
GPU job per joined step and seed (`knob_joined`: the step's fold runs trained in turn, then their
test embeddings joined into `concatenated.json`; a fold run's folder and `metrics.json` are the
plan's run's) and the aggregate's inputs and spec."""

from __future__ import annotations

from dmlbench.config import fair_catalogue, knob_recipes
from dmlbench.config.knob_specs import _text
from dmlbench.config.run import Run
from dmlbench.core.errors import ConfigError
from dmlbench.training import run_folder


class KnobStepJobs:
    """The knob experiment's steps' inputs and specs."""

    def knob_joined_runs(self, experiment: str, dataset: str, step: str, seed: int) -> list[Run]:
        """The fold runs of a joined step (`<method>@<paper>-<step>`), in fold order."""
        runs = [Run(experiment, dataset, f"{step}.fold{k}", seed) for k in range(self.knob_folds)]
        missing = [run for run in runs if run not in self.knob_run_index(experiment)]
        if missing:
            raise ConfigError(
                f"preset {self.name} has no fold runs {missing[0].path(self.name)} …: "
                f"{experiment}/{dataset}/{step} joins no folds"
            )
        return runs

    def knob_joined_inputs(self, experiment: str, dataset: str, step: str, seed: int) -> list[str]:
        return sorted(
            {path for run in self.knob_joined_runs(experiment, dataset, step, seed) for path in self.train_inputs(run)}
        )

    def knob_joined_settings(self, experiment: str, dataset: str, step: str, seed: int) -> str:
        """The fold runs' fingerprints (the settings that decide their numbers): the rerun trigger."""
        return " ".join(
            run_folder.fingerprint(self.resolved(run)) for run in self.knob_joined_runs(experiment, dataset, step, seed)
        )

    def knob_joined_spec(self, experiment: str, dataset: str, step: str, seed: int) -> dict:
        """Each fold run's settings (numbers and side) and its metrics file."""
        folds = []
        for run in self.knob_joined_runs(experiment, dataset, step, seed):
            numbers, side = run_folder.numbers_and_side(self.resolved(run))
            folds.append({"spec": numbers, "side": side, "metrics": f"{run.path(self.name)}/metrics.json"})
        return {"folds": folds}

    def knob_aggregate_inputs(self, experiment: str) -> list[str]:
        out = [
            self.knob_result(path, method, fair_method, step, seed)
            for path in self.knob_paths(experiment)
            for method, fair_method in path.methods
            for step in path.paths.steps
            for seed in self.knob_seeds(experiment)
        ]
        return out + [self.fair_summary(knob_recipes.FAIR, d, m) for d, m in self._knob_tuned(experiment)]

    def knob_aggregate_spec(self, experiment: str) -> dict:
        catalogue = knob_recipes.catalogue(self)
        seeds = self.knob_seeds(experiment)
        tuned = set(self._knob_tuned(experiment))
        printed_recall = fair_catalogue.paper_recall_at_1(self, knob_recipes.FAIR, self.datasets_of(experiment))
        recipes = []
        for path in self.knob_paths(experiment):
            source = self.experiments[path.recipe.paper_run.experiment]
            printed = (
                printed_recall.get(path.methods[0][1], {}).get(path.dataset, [None])[0]
                if path.stand_in is None
                else None
            )
            test_selected = "recall@1" in ((source.get("table") or {}).get("test_selected") or [])
            methods = {}
            for method, fair_method in path.methods:
                methods[method] = {
                    "label": self.methods[method].get("label", method),
                    "fair_method": fair_method,
                    "steps": {
                        step.name: [self.knob_result(path, method, fair_method, step, s) for s in seeds]
                        for step in path.paths.steps
                    },
                    "tuned": (
                        self.fair_summary(knob_recipes.FAIR, path.dataset, fair_method)
                        if (path.dataset, fair_method) in tuned
                        else None
                    ),
                }
            recipes.append(
                {
                    "paper": path.paper,
                    "dataset": path.dataset,
                    "source": path.recipe.paper_run.experiment,
                    "stand_in": path.stand_in,
                    "headline": path.methods[0][0],
                    "baseline": path.methods[1][0],
                    "paper_number": printed,
                    "test_selected": test_selected,
                    "knobs": [
                        {
                            "name": k.name,
                            "label": k.label,
                            "paper": {key: _text(v) for key, v in k.paper.items()},
                            "fair": {key: _text(v) for key, v in k.fair.items()},
                        }
                        for k in path.knobs
                    ],
                    "cumulative": [s.name for s in path.paths.cumulative],
                    "alone": {name: [step.name, base.name] for name, (step, base) in path.paths.alone.items()},
                    "back": {name: [step.name, base.name] for name, (step, base) in path.paths.back.items()},
                    "moved": {s.name: list(s.moved) for s in path.paths.steps},
                    "figure": f"waterfalls/{path.paper}_{path.dataset}.png",
                    "methods": methods,
                }
            )
        return {
            "experiment": experiment,
            "title": self.title(experiment),
            "toy_data": self.toy_data,
            "seeds": seeds,
            "papers": {p: self.papers.get(p, p) for p in catalogue.headline},
            "protocol_reads": "selection",
            "recipes": recipes,
        }
