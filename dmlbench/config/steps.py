"""The paths and specs the pipeline's steps read, per dataset, run, experiment and reference row
(a part of `Plan`: it uses the plan's preset, catalogue and runs)."""

from __future__ import annotations

import re
from pathlib import Path

from dmlbench.config import fair_catalogue, margins
from dmlbench.config.loading import deep_merge, printed_numbers
from dmlbench.config.run import Run
from dmlbench.data import fixtures
from dmlbench.data.datasets import DATASETS
from dmlbench.core.errors import ConfigError
from dmlbench.evaluation import reference
from dmlbench.models import timm_trunks
from dmlbench.run_config import RunConfig
from dmlbench.training import run_folder

FAIR = "suite.fair"  # the fair table a trunk ranking is compared with

FINGERPRINT_CHARS = 16  # of a run's fingerprint in an aggregation's spec: 64 bits tell settings apart


TITLE_SETTING = re.compile(r"\{([a-z_.]+)\}")  # a training setting named in a title: {record.scatter_epochs}


def paper_label(exp: dict, method: str) -> str | None:
    """The paper's name of a method's row (`layout.labels`), after its header band where the
    table has two header levels (fastap Table 2: "ResNet-18 Random")."""
    declared = exp.get("layout") or {}
    label = (declared.get("labels") or {}).get(method)
    band = next((name for name, keys in (declared.get("bands") or {}).items() if method in keys), None)
    return f"{band} {label}" if label and band else label


class StepSpecs:
    """Paths and per-step specs of a `Plan`."""

    @property
    def data_dir(self) -> str:
        """`<root>/real`, or `<root>/fixture/<size>`: one folder per fixture size, so that presets
        of other sizes (smoke, demo) never remake each other's data."""
        data = self.preset["data"]
        if data["source"] == "fixture":
            return f"{data['root']}/fixture/{fixtures.folder_name(data.get('fixture'))}"
        return f"{data['root']}/{data['source']}"

    def manifest(self, dataset: str) -> str:
        """The manifest training reads: the cached one when the preset has an image cache."""
        size = self.preset["data"]["cache"]
        if size:
            return f"{self.data_dir}/{dataset}/cache{size}/manifest.csv"
        return f"{self.data_dir}/{dataset}/manifest.csv"

    def store(self, dataset: str, side: int) -> str | None:
        """The decoded-image store a run reads (beside its manifest), when the preset has one."""
        if not self.preset["data"].get("store"):
            return None
        return f"{Path(self.manifest(dataset)).parent}/store{side}"

    def gpu_jobs(self) -> list[dict]:
        """Every training job of the plan: its rule, the run folders it trains and, for a fair
        search job, its chain (the search jobs of one search run one after another, then its
        final jobs side by side)."""
        jobs = [{"rule": "train", "runs": [run.path(self.name)], "chain": None, "stage": None}
                for run in self.runs()]
        for experiment in self.experiment_ids:
            if not self.is_fair(experiment):
                continue
            for dataset, method in self.fair_pairs(experiment):
                chain = (experiment, dataset, method)
                jobs += [{"rule": "fair_stage", "runs": self.fair_stage_runs(experiment, dataset, method, s),
                          "chain": chain, "stage": "search"} for s in range(self.fair_stages(experiment))]
                jobs += [{"rule": "fair_final", "runs": self.fair_group_runs(experiment, dataset, method, g),
                          "chain": chain, "stage": "final"} for g in range(self.fair_final_groups(experiment))]
        return jobs

    def has_budget(self) -> bool:
        """Whether the preflight's budget of this preset is in the working folder."""
        return bool(self._budget())

    def projected_hours(self, runs: list[str]) -> float | None:
        """The device-hours the preflight's budget (`reports/<preset>/preflight/budget.csv`, in
        the working folder) projects for these run folders; None without a budget, or when it
        lacks one of them."""
        try:
            return sum(self._budget()[run] for run in runs)
        except KeyError:
            return None

    def _budget(self) -> dict[str, float]:
        if not hasattr(self, "_projected"):
            self._projected = _budget_hours(Path(f"reports/{self.name}/preflight/budget.csv"))
        return self._projected

    def paper_setting(self, run: Run) -> dict:
        """A run of one of the papers' experiments as the catalogue defines it, without this
        preset's layers (overrides, per-dataset settings, CPU settings, subset): its paper's setting."""
        return self._resolve(run, with_preset=False)

    def train_inputs(self, run: Run) -> list[str]:
        """What a run's training reads: its store (made from its manifest) or else its manifest,
        and its fold split file where it has one. The manifest is not named beside its store: the
        store is made again when it changes, and one input less per job is felt at `full`'s size."""
        return [*(self.store_marker(run) or [self.manifest(run.dataset)]), *self.split_inputs(run)]

    def store_marker(self, run: Run) -> list[str]:
        """The store file a run's training needs (none without a store)."""
        folder = self.resolved(run)["data"].get("store")
        return [f"{folder}/store.json"] if folder else []

    def prepare_spec(self, dataset: str) -> dict:
        data = self.preset["data"]
        return {"dataset": dataset, "source": data["source"], "root": data["root"],
                "path": data["paths"].get(dataset), "download": data["download"],
                "fixture": data.get("fixture")}

    def aggregate_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        return {"experiment": experiment, "title": self.title(experiment), "toy_data": self.toy_data,
                "paper": exp.get("paper"), "table": exp.get("table", {}), "margin": margins.of(self.config_dir, exp),
                "reported": printed_numbers(exp.get("reported", {})),
                "quoted": printed_numbers(exp.get("quoted", {})),
                "method_labels": {run.method: paper_label(exp, run.method) or self._label(run)
                                  for run in self.runs(experiment)},
                "plot": exp.get("plot"), "figures": exp.get("figures") or [],
                "trunks": {variant: self._trunk(entry) for variant, entry in (exp.get("sweep") or {}).items()
                           if variant in {run.variant for run in self.runs(experiment)}},
                "paper_recall": (fair_catalogue.paper_recall_at_1(self, experiment, self.datasets_of(experiment))
                                 if exp.get("paper_numbers") else {}),
                "datasets": self.datasets_of(experiment),
                "reference_of": [[d, m, name] for (d, m), name in self.reference_map(experiment).items()],
                # the plan's settings of each run (`dataset/method/seedN`), checked against its metrics
                "fingerprints": {f"{run.dataset}/{run.method}/seed{run.seed}":
                                 run_folder.fingerprint(self.resolved(run))[:FINGERPRINT_CHARS]
                                 for run in self.runs(experiment)}}

    def ranked_against_fair(self) -> list[str]:
        """The trunk-ranked experiments (`figures: [trunk_ranking]`) whose methods suite.fair ranks
        in this preset too: each gets `ranking_vs_fair.md` (`dmlbench.report.ranking_vs_fair`)."""
        return [e for e in self.experiment_ids if "trunk_ranking" in (self.experiments[e].get("figures") or [])
                and self._fair_reference(e)]

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
        return {"runs": f"reports/{self.name}/{experiment}/runs.csv", "fair": self._fair_reference(experiment),
                "trunks": {variant: self._trunk(entry)["label"] for variant, entry in (exp.get("sweep") or {}).items()
                           if variant in {run.variant for run in self.runs(experiment)}}}

    def ranking_vs_fair_inputs(self, experiment: str) -> list[str]:
        spec = self.ranking_vs_fair_spec(experiment)
        return [spec["runs"]] + sorted({path for per in spec["fair"].values() for path in per.values()})

    @staticmethod
    def _trunk(sweep_entry: dict) -> dict:
        """A sweep variant's `model.backbone` and its name in tables and figures."""
        backbone = ((sweep_entry.get("train") or {}).get("model") or {}).get("backbone")
        trunk = timm_trunks.TRUNKS.get(backbone)
        return {"backbone": backbone, "label": trunk.label if trunk else str(backbone)}

    def title(self, experiment: str) -> str:
        """The experiment's title, each `{setting.path}` in it filled with that training setting
        of the preset's first run (the catalogue's own where the preset runs none): ephn Figure 6
        names the epochs this preset records."""
        exp = self.experiments[experiment]
        title = exp.get("title", experiment)
        if not TITLE_SETTING.search(title):
            return title
        runs = self.runs(experiment) if experiment in self.experiment_ids else []
        settings = self.resolve(runs[0]) if runs else deep_merge(self.defaults, exp.get("train") or {})

        def setting(match: re.Match) -> str:
            value = settings
            for part in match.group(1).split("."):  # a setting's key path (validation checks it)
                value = value[part]
            return ", ".join(map(str, value)) if isinstance(value, list) else str(value)

        return TITLE_SETTING.sub(setting, title)

    # --- reference rows (embeddings before any training step) ------------------------------

    def reference_map(self, experiment: str) -> dict[tuple[str, str], str]:
        """(dataset, method) → the name of the reference its table rows are compared with: the
        run of the experiment's first seed."""
        runs = self.runs(experiment)
        first = min((run.seed for run in runs), default=0)
        return {(run.dataset, run.method): reference.name_of(self._reference_key(run))
                for run in runs if run.seed == first}

    def _reference_key(self, run: Run) -> dict:
        return reference.key_of(RunConfig.from_dict(self.resolve(run)), DATASETS.get(run.dataset).pixel_side,
                                f"{self.data_dir}/{run.dataset}/manifest.csv")

    def _references(self) -> dict[str, Run]:
        """Every reference job of the chosen experiments, with a run that defines it."""
        if not hasattr(self, "_reference_runs"):
            found = {}
            for key in self.experiment_ids:
                runs = self.runs(key)
                first = min((run.seed for run in runs), default=0)
                for run in runs:
                    if run.seed == first:
                        found.setdefault(reference.name_of(self._reference_key(run)), run)
            self._reference_runs = found
        return self._reference_runs

    def reference_path(self, name: str) -> str:
        return f"results/{self.name}/reference/{name}/metrics.json"

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

    def _run_of_reference(self, name: str) -> Run:
        try:
            return self._references()[name]
        except KeyError:
            raise ConfigError(f"preset {self.name} has no reference {name!r}") from None

    def _label(self, run: Run) -> str:
        label = self.methods[run.base_method].get("label", run.base_method)
        return f"{label} ({run.variant})" if run.variant else label


def _budget_hours(path: Path) -> dict[str, float]:
    """run folder → projected hours, from a preflight's budget.csv (empty when there is none)."""
    import csv

    if not path.is_file():
        return {}
    with open(path, newline="") as handle:
        return {row["run"]: float(row["hours"]) for row in csv.DictReader(handle)}
