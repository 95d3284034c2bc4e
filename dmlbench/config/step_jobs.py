"""What the Snakemake rules ask of a plan for the ordinary steps (a part of `Jobs`): a training's
and a reference's inputs, the specs of prepare, aggregate, reference, analysis and the ranking
against the fair table, and the report folders' markers."""

from __future__ import annotations

from dmlbench.config import fair_catalogue, margins
from dmlbench.config.loading import deep_merge, printed_numbers
from dmlbench.config.run import Run
from dmlbench.data.datasets import DATASETS
from dmlbench.evaluation import reference
from dmlbench.run_config import RunConfig

FAIR = "suite.fair"  # the fair table a trunk ranking is compared with
FINGERPRINT_CHARS = 16  # of a run's fingerprint in an aggregation's spec: 64 bits tell settings apart


def paper_label(exp: dict, method: str) -> str | None:
    """The paper's name of a method's row (`layout.labels`), after its header band where the
    table has two header levels (fastap Table 2: "ResNet-18 Random")."""
    declared = exp.get("layout") or {}
    label = (declared.get("labels") or {}).get(method)
    band = next((name for name, keys in (declared.get("bands") or {}).items() if method in keys), None)
    return f"{band} {label}" if label and band else label


class StepJobs:
    """The ordinary steps' inputs and specs."""

    def train_inputs(self, run: Run) -> list[str]:
        """What a run's training reads: its store (made from its manifest) or else its manifest,
        and its fold split file where it has one. The manifest is not named beside its store: the
        store is made again when it changes, and one input less per job is felt at `full`'s size."""
        return [*(self.store_marker(run) or [self.manifest(run.dataset)]), *self.split_inputs(run)]

    def alias_input(self, run: Run) -> str:
        """A run trained as an earlier one (`Plan.trained_as`): that run's metrics.json, which its
        folder links to. Any other run: a file no rule makes, so that Snakemake leaves rule
        `train_alias` for rule `train` (an exception here would be printed for every run)."""
        found = self.trained_as(run)
        if found == run:
            return f"{run.path(self.name)}/.trained-in-this-folder"
        return f"{found.path(self.name)}/metrics.json"

    def store_marker(self, run: Run) -> list[str]:
        """The store file a run's training needs (none without a store)."""
        folder = self.resolved(run)["data"].get("store")
        return [f"{folder}/store.json"] if folder else []

    def prepare_spec(self, dataset: str) -> dict:
        """What prepare reads; a CSV dataset's content (not its path: a moved CSV reruns nothing),
        which the step finds by the workflow's environment (`csv_datasets.environment`)."""
        data = self.preset["data"]
        csv = self.csv_digests.get(dataset)
        return {
            "dataset": dataset,
            "source": data["source"],
            "root": data["root"],
            "path": data["paths"].get(dataset),
            "download": data["download"],
            "fixture": data.get("fixture"),
            **({"csv_sha256": csv} if csv else {}),
        }

    def aggregate_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        return {
            "experiment": experiment,
            "title": self.title(experiment),
            "toy_data": self.toy_data,
            "own_data": [d for d in self.datasets_of(experiment) if DATASETS.get(d).csv],  # a CSV's real images
            "paper": exp.get("paper"),
            "table": exp.get("table", {}),
            "margin": margins.of(self.config_dir, exp),
            "reported": printed_numbers(exp.get("reported", {})),
            "quoted": printed_numbers(exp.get("quoted", {})),
            "method_labels": {
                run.method: paper_label(exp, run.method) or self._label(run) for run in self.runs(experiment)
            },
            "plot": exp.get("plot"),
            "figures": exp.get("figures") or [],
            "trunks": {
                variant: self._trunk(entry)
                for variant, entry in (exp.get("sweep") or {}).items()
                if variant in {run.variant for run in self.runs(experiment)}
            },
            "paper_recall": (
                fair_catalogue.paper_recall_at_1(self, experiment, self.datasets_of(experiment))
                if exp.get("paper_numbers")
                else {}
            ),
            "datasets": self.datasets_of(experiment),
            "reference_of": [[d, m, name] for (d, m), name in self.reference_map(experiment).items()],
            # the plan's settings of each run (`dataset/method/seedN`), checked against its metrics
            "fingerprints": {
                f"{run.dataset}/{run.method}/seed{run.seed}": _prefixes(self.accepted_fingerprints(run))
                for run in self.runs(experiment)
            },
        }

    def ranked_against_fair(self) -> list[str]:
        """The trunk-ranked experiments (`figures: [trunk_ranking]`) whose methods suite.fair ranks
        in this preset too: each gets `ranking_vs_fair.md` (`dmlbench.report.ranking_vs_fair`)."""
        return [
            e
            for e in self.experiment_ids
            if "trunk_ranking" in (self.experiments[e].get("figures") or []) and self._fair_reference(e)
        ]

    def _fair_reference(self, experiment: str) -> dict[str, dict[str, str]]:
        """dataset → the experiment's method → its suite.fair summary (`fair_methods` maps an id
        suite.fair spells otherwise; null: not in the fair table)."""
        if FAIR not in self.experiment_ids:
            return {}
        ranked = set(self.fair_pairs(FAIR))
        renamed = self.experiments[experiment].get("fair_methods") or {}
        out: dict[str, dict[str, str]] = {}
        for run in self.runs(experiment):
            fair = renamed.get(run.base_method, run.base_method)
            if fair and (run.dataset, fair) in ranked:
                out.setdefault(run.dataset, {})[run.base_method] = self.fair_summary(FAIR, run.dataset, fair)
        return out

    def ranking_vs_fair_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        return {
            "runs": f"reports/{self.name}/{experiment}/runs.csv",
            "fair": self._fair_reference(experiment),
            "trunks": {
                variant: self._trunk(entry)["label"]
                for variant, entry in (exp.get("sweep") or {}).items()
                if variant in {run.variant for run in self.runs(experiment)}
            },
        }

    def ranking_vs_fair_inputs(self, experiment: str) -> list[str]:
        spec = self.ranking_vs_fair_spec(experiment)
        return [spec["runs"]] + sorted({path for per in spec["fair"].values() for path in per.values()})

    def experiment_references(self, experiment: str) -> list[str]:
        return [self.reference_path(name) for name in dict.fromkeys(self.reference_map(experiment).values())]

    def reference_spec(self, name: str) -> dict:
        run = self._run_of_reference(name)
        return reference.spec_of(RunConfig.from_dict(self.resolve(run)), self._reference_key(run))

    def reference_inputs(self, name: str) -> list[str]:
        """The files a reference job reads: the runs' manifest (and store), the raw one for pixels."""
        run = self._run_of_reference(name)
        inputs = [self.manifest(run.dataset), *self.store_marker(run)]
        if DATASETS.get(run.dataset).pixel_side:
            inputs.append(f"{self.data_dir}/{run.dataset}/manifest.csv")
        return list(dict.fromkeys(inputs))

    def report_marker(self, experiment: str) -> str:
        """The file whose presence says the experiment's report folder is complete."""
        name = (
            "summary.md"
            if self.is_analysis(experiment)
            else "fair_table.csv"
            if self.is_fair(experiment)
            else "attribution.csv"
            if self.is_knobs(experiment)
            else "table.csv"
        )
        return f"reports/{self.name}/{experiment}/{name}"

    def analysis_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        overrides = exp.get("loss_overrides") or {}
        methods = {
            name: {
                "label": self.methods[name].get("label", name),
                "loss": deep_merge(self.methods[name]["loss"], overrides.get(name)),
                "miner": self.methods[name].get("miner"),
            }
            for name in exp.get("methods") or []
        }
        return {
            "experiment": experiment,
            "title": exp.get("title", experiment),
            "paper": exp.get("paper"),
            "analysis": exp["analysis"],
            "methods": methods,
        }


def _prefixes(fingerprints: list[str]) -> str | list[str]:
    """The starts of a run's accepted fingerprints (`RunSettings.accepted_fingerprints`) as an
    aggregation's spec holds them: one as a string, several as a list."""
    starts = [found[:FINGERPRINT_CHARS] for found in fingerprints]
    return starts[0] if len(starts) == 1 else starts
