"""The retrieved-images figures a preset asks for (`retrieved:` in the preset; a part of `Jobs`).

Per dataset of each experiment named there, the figure shows the top-k gallery images of a few
fixed queries for two runs side by side: the paper's headline method (`headline` of
`workflow/config/knobs.yaml`) and the baseline (that file's `baseline` where the experiment runs
it, else the experiment's first other method run: an ablation's first row), each the run of the
lowest seed the preset runs (seed 0) and, in a sweep, of its first variant. `check` refuses an
entry that cannot be drawn when the plan loads; one narrowed to fewer methods has no figure."""

from __future__ import annotations

from dmlbench.config import knob_recipes
from dmlbench.config.run import Run
from dmlbench.config.step_jobs import paper_label
from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean
from dmlbench.data.datasets import DATASETS

DEFAULTS = {"k": 5, "queries": 4, "seed": 0}
FOLDER = "retrieved"  # reports/<preset>/<experiment>/retrieved/<dataset>.{json,png}


def settings(plan) -> dict:
    """The preset's `retrieved` entry with its defaults (no experiments where it has none)."""
    return {**DEFAULTS, "experiments": [], **(plan.preset.get("retrieved") or {})}


def _headline(plan, experiment: str) -> str | None:
    return knob_recipes.catalogue(plan).headline.get(plan.experiments[experiment].get("paper"))


def _methods(plan, experiment: str) -> tuple[str, str] | None:
    """(headline, baseline) method ids of `experiment` among the runs planned (None where the
    preset or the command line narrowed it to fewer: no figure)."""
    baseline, headline = knob_recipes.catalogue(plan).baseline, _headline(plan, experiment)
    ran = list(dict.fromkeys(run.base_method for run in plan.runs(experiment)))
    others = [m for m in ran if m != headline]
    if headline not in ran or not others:
        return None
    return headline, baseline if baseline in others else others[0]


def check(plan) -> None:
    """Refuse an unknown experiment, and one of no trained table, no headline method or nothing
    beside it in the catalogue."""
    for experiment in settings(plan)["experiments"]:
        where = f"preset {plan.name}.retrieved: {experiment}"
        if experiment not in plan.experiments:
            raise ConfigError(f"{where}: unknown experiment{did_you_mean(experiment, plan.experiments)}")
        if plan.is_analysis(experiment) or plan.is_fair(experiment) or plan.is_knobs(experiment):
            raise ConfigError(f"{where} is not a table of trained runs (an analysis, the fair table or suite.knobs)")
        exp, headline = plan.experiments[experiment], _headline(plan, experiment)
        if headline not in exp["methods"] or len(exp["methods"]) < 2:
            raise ConfigError(
                f"{where}: needs its paper's headline method (workflow/config/knobs.yaml: "
                f"{knob_recipes.catalogue(plan).headline}) and another method among its methods "
                f"({', '.join(exp['methods'])}); its paper: {exp.get('paper')!r}"
            )


def _run(plan, experiment: str, dataset: str, method: str) -> Run | None:
    """The shown run of `method` on `dataset`: its first variant's, at the lowest seed."""
    found = [r for r in plan.runs(experiment) if r.dataset == dataset and r.base_method == method]
    variants = list(dict.fromkeys(r.variant for r in found))
    return min((r for r in found if r.variant == variants[0]), key=lambda r: r.seed) if found else None


class RetrievedJobs:
    """The retrieved-images figures' pairs, inputs, specs and outputs."""

    def retrieved_pairs(self) -> list[tuple[str, str]]:
        """(experiment, dataset) of every figure: where both runs are planned."""
        out = []
        for experiment in settings(self.plan)["experiments"]:
            if experiment not in self.experiment_ids:
                continue  # the preset was narrowed to other experiments
            methods = _methods(self.plan, experiment)
            for dataset in self.datasets_of(experiment) if methods else []:
                if all(_run(self.plan, experiment, dataset, m) for m in methods):
                    out.append((experiment, dataset))
        return out

    def retrieved_runs(self, experiment: str, dataset: str) -> list[tuple[str, Run]]:
        """(role, run) of the figure's two runs, headline first."""
        headline, baseline = _methods(self.plan, experiment)
        return [
            (role, _run(self.plan, experiment, dataset, m))
            for role, m in (("headline", headline), ("baseline", baseline))
        ]

    def retrieved_inputs(self, experiment: str, dataset: str) -> list[str]:
        """The two runs' metrics.json: the figure is drawn again when either run is trained again."""
        return [f"{run.path(self.name)}/metrics.json" for _, run in self.retrieved_runs(experiment, dataset)]

    def retrieved_outputs(self) -> list[str]:
        return [
            f"reports/{self.name}/{e}/{FOLDER}/{d}.{suffix}"
            for e, d in self.retrieved_pairs()
            for suffix in ("json", "png")
        ]

    def retrieved_spec(self, experiment: str, dataset: str) -> dict:
        """What the step reads: the runs (folder, labels, the fingerprints the plan accepts,
        `RunSettings.accepted_fingerprints`: a run of other settings is refused), k, the queries'
        number and seed, and how the data is to be named."""
        chosen, exp = settings(self.plan), self.experiments[experiment]
        spec = DATASETS.get(dataset)
        synthetic = self.toy_data and spec.write_shipped is None
        return {
            "experiment": experiment,
            "dataset": dataset,
            "dataset_label": (exp.get("layout") or {}).get("datasets", {}).get(dataset) or spec.label or dataset,
            "k": chosen["k"],
            "queries": chosen["queries"],
            "seed": chosen["seed"],
            "data_note": (
                "fixture data: synthetic images; these neighbours test the pipeline, not the methods"
                if synthetic
                else f"{self.name} preset: small networks trained briefly; these neighbours test the pipeline"
                if self.toy_data
                else None
            ),
            "runs": [
                {
                    "role": role,
                    "method": run.method,
                    "label": paper_label(exp, run.base_method)
                    or self.methods[run.base_method].get("label", run.method),
                    "seed": run.seed,
                    "run_dir": run.path(self.name),
                    "fingerprints": self.accepted_fingerprints(run),
                }
                for role, run in self.retrieved_runs(experiment, dataset)
            ],
        }
