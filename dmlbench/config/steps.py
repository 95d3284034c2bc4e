"""The paths and specs the pipeline's steps read, per dataset, run, experiment and reference row
(a part of `Plan`: it uses the plan's preset, catalogue and runs)."""

from __future__ import annotations

import re
from pathlib import Path

from dmlbench.config.loading import deep_merge
from dmlbench.config.run import Run
from dmlbench.data import fixtures
from dmlbench.data.datasets import DATASETS
from dmlbench.core.errors import ConfigError
from dmlbench.evaluation import reference
from dmlbench.models.names import backbone_label, setting_label
from dmlbench.run_config import RunConfig


TITLE_SETTING = re.compile(r"\{([a-z_.]+)\}")  # a training setting named in a title: {record.scatter_epochs}


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
        """Every training job of the workflow: its rule, the run folders it trains and, for a fair
        search job, its chain (the search jobs of one search run one after another, then its
        final jobs side by side); a joined knob step's fold runs are one job (`knob_joined`), as
        the workflow's. The reference jobs, which train nothing, are not listed."""
        jobs, joined = [], {}
        for run in self.runs():
            if self.trained_as(run) != run:
                continue  # a link to the earlier run it is (`run_dedup`): no training job
            if self._joined_fold(run):  # <method>@<paper>-<step>.fold<k>: one job per step and seed trains its folds
                key = (run.experiment, run.dataset, run.method.rsplit(".fold", 1)[0], run.seed)
                joined.setdefault(key, []).append(run.path(self.name))
            else:
                jobs.append({"rule": "train", "runs": [run.path(self.name)], "chain": None, "stage": None})
        jobs += [{"rule": "knob_joined", "runs": runs, "chain": None, "stage": None} for runs in joined.values()]
        for experiment in self.experiment_ids:
            if not self.is_fair(experiment):
                continue
            for dataset, method in self.fair_pairs(experiment):
                chain = (experiment, dataset, method)
                jobs += [
                    {
                        "rule": "fair_round",
                        "runs": self.fair_round_runs(experiment, dataset, method, r),
                        "chain": chain,
                        "stage": "search",
                    }
                    for r in range(self.fair_rounds(experiment))
                ]
                jobs += [
                    {
                        "rule": "fair_final",
                        "runs": self.fair_group_runs(experiment, dataset, method, g),
                        "chain": chain,
                        "stage": "final",
                    }
                    for g in range(self.fair_final_groups(experiment))
                ]
        return jobs

    def train_job_runs(self) -> list[Run]:
        """The runs rule `train` trains, one job each: no link to an earlier run's training
        (`run_dedup`), no fold of a joined knob step (`knob_joined` trains those)."""
        return [run for run in self.runs() if self.trained_as(run) == run and not self._joined_fold(run)]

    def _joined_fold(self, run: Run) -> bool:
        return self.is_knobs(run.experiment) and self.knob_run_index(run.experiment)[run].fold is not None

    def has_budget(self) -> bool:
        """Whether a time can be projected for some run: the preflight's budget of this preset is
        in the working folder, or some of its runs have finished (`dmlbench.config.measured`)."""
        return bool(self._budget()) or bool(self._measured())

    def projected_hours(self, runs: list[str]) -> float | None:
        """The hours these run folders will take: per run, the finished runs of its kind (the
        `measured.QUANTILE` of their wall hours) where there are any, else the preflight's
        budget (`reports/<preset>/preflight/budget.csv`, in the working folder); None when a run
        has neither."""
        from dmlbench.config.measured import kind

        measured, budget, total = self._measured(), self._budget(), 0.0
        for run in runs:
            hours = measured.get(kind(run), budget.get(run))
            if hours is None:
                return None
            total += hours
        return total

    def _budget(self) -> dict[str, float]:
        if not hasattr(self, "_projected"):
            self._projected = _budget_hours(Path(f"reports/{self.name}/preflight/budget.csv"))
        return self._projected

    def _measured(self) -> dict[str, float]:
        if not hasattr(self, "_measured_hours"):
            from dmlbench.config.measured import measured_hours

            self._measured_hours = measured_hours(self.name)
        return self._measured_hours

    def paper_setting(self, run: Run) -> dict:
        """A run of one of the papers' experiments as the catalogue defines it, without this
        preset's layers (overrides, per-dataset settings, CPU settings, subset): its paper's setting."""
        return self._resolve(run, with_preset=False)

    @staticmethod
    def _trunk(sweep_entry: dict) -> dict:
        """A sweep variant's `model.backbone` and its name in tables and figures."""
        backbone = ((sweep_entry.get("train") or {}).get("model") or {}).get("backbone")
        return {"backbone": backbone, "label": backbone_label(backbone) if backbone else str(backbone)}

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
        return {
            (run.dataset, run.method): reference.name_of(self._reference_key(run)) for run in runs if run.seed == first
        }

    def _reference_key(self, run: Run) -> dict:
        return reference.key_of(
            RunConfig.from_dict(self.resolve(run)),
            DATASETS.get(run.dataset).pixel_side,
            f"{self.data_dir}/{run.dataset}/manifest.csv",
        )

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

    def _run_of_reference(self, name: str) -> Run:
        try:
            return self._references()[name]
        except KeyError:
            raise ConfigError(f"preset {self.name} has no reference {name!r}") from None

    def _label(self, run: Run) -> str:
        """The method's label, with its sweep setting (a trunk by its label) where it has one."""
        label = self.methods[run.base_method].get("label", run.base_method)
        if not run.variant:
            return label
        entry = (self.experiments[run.experiment].get("sweep") or {}).get(run.variant) or {}
        return f"{label} ({setting_label(run.variant, entry)})"


def _budget_hours(path: Path) -> dict[str, float]:
    """run folder → projected hours, from a preflight's budget.csv (empty when there is none)."""
    import csv

    if not path.is_file():
        return {}
    with open(path, newline="") as handle:
        return {row["run"]: float(row["hours"]) for row in csv.DictReader(handle)}
