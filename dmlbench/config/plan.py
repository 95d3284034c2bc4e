"""From a preset and the experiment catalogue to the list of runs and each run's resolved config.

Every training setting and its default is a field of `dmlbench.run_config`; the catalogue lives in
`workflow/config/`: `methods.yaml`, `experiments/<paper>.yaml` (ids `<paper>.t<N>` / `.f<N>`: the catalogue,
docs/generated/catalogue.md) and `presets/<name>.yaml`. How a run's settings are merged: `resolution`.
Validation lives in `validation` and `run_checks`, the paths and specs of the pipeline's steps in `steps`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import jsonschema

from dmlbench.run_config import defaults, json_schema, values
from dmlbench.config import fair_job_sizes, knob_recipes, own_methods, retrieved_jobs, run_checks, validation
from dmlbench.config import claim_seeds, csv_datasets, second_wave
from dmlbench.config.fair_specs import FairSpecs
from dmlbench.config.knob_specs import KnobSpecs
from dmlbench.config.loading import deep_merge, load_yaml, plain_numbers, schema_hint, with_dataset_names, with_settings
from dmlbench.config.resolution import RunSettings
from dmlbench.config.run import Run
from dmlbench.config.steps import StepSpecs
from dmlbench.data.datasets import DATASETS
from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean
from dmlbench.training.optimisers import OPTIMISERS

PAPER_NUMBERS = ("reported", "quoted")  # an experiment's keys whose numbers keep the paper's digits
PRESET_NAME = re.compile(r"[A-Za-z0-9_-]+")  # the `preset` wildcard of the rules


def preset_source(config_dir: Path, name, preset_file) -> tuple[str, Path]:
    """The preset's name and file: `preset=NAME` is a file `NAME.yaml` of `presets/`, nothing else;
    `preset_file=PATH` reads another file, the preset taking the file's stem as its name."""
    known = sorted(p.stem for p in (config_dir / "presets").glob("*.yaml"))
    if preset_file is None:
        name = "full" if name is None else name
        if not (
            isinstance(name, str)
            and PRESET_NAME.fullmatch(name)
            and (config_dir / "presets" / f"{name}.yaml").is_file()
        ):
            raise ConfigError(
                f"unknown preset {name!r}{did_you_mean(str(name), known)}: a preset is the name "
                f"of a file in {config_dir / 'presets'} ({', '.join(known)}); a preset file "
                f"elsewhere is given with preset_file=PATH"
            )
        return name, config_dir / "presets" / f"{name}.yaml"
    if name is not None:
        raise ConfigError(f"preset={name} and preset_file={preset_file} both name a preset: give one of them")
    path = Path(str(preset_file)).expanduser().absolute()
    if not path.is_file():
        raise ConfigError(
            f"preset_file={preset_file}: {path} is not a file; give the path of a preset's "
            f"YAML file (the files of {config_dir / 'presets'} are a model)"
        )
    if not PRESET_NAME.fullmatch(path.stem) or path.stem in known:
        raise ConfigError(
            f"preset_file={preset_file}: the preset takes the file's name, {path.stem!r}, "
            f"which names its results/ and reports/ folders; rename the file to letters, "
            f"digits, '_' and '-', other than the built-in presets ({', '.join(known)})"
        )
    return path.stem, path


class Plan(RunSettings, StepSpecs, FairSpecs, KnobSpecs):
    """The preset, the catalogue, the runs they expand into, and each run's resolved config."""

    preset_file: Path | None = None  # the file of a preset given by `preset_file=PATH` (`preset_owner`)

    def __init__(self, config_dir: Path, preset: dict):
        self.config_dir = Path(config_dir)
        self.preset = preset
        self.name = preset["preset"]
        self.defaults = defaults()
        self.settings_schema = json_schema(OPTIMISERS.names())
        self.methods = load_yaml(self.config_dir / "methods.yaml")
        self.papers = load_yaml(self.config_dir / "papers.yaml")
        self.experiments = self._load_experiments()
        own_methods.merge(self)
        csv_datasets.join(self)
        validation.check_catalogue(self)
        validation.check_preset(self)
        self.skipped = self._experiments_without_runs()
        run_checks.check_runs(self)
        run_checks.check_fair_runs(self)
        fair_job_sizes.check(self)
        knob_recipes.check(self)
        retrieved_jobs.check(self)

    @classmethod
    def load(cls, config_dir: str | Path, config: dict | None = None) -> "Plan":
        """Load preset `config["preset"]` (default `full`) or the file `config["preset_file"]`, merge
        the rest of `config` over it, validate."""
        config = dict(config or {})
        config_dir = Path(config_dir)
        given = config.pop("preset_file", None)
        name, preset_file = preset_source(config_dir, config.get("preset"), given)
        base = load_yaml(preset_file)
        csv_datasets.register(deep_merge(base, config))  # the CSV datasets' names are the schema's too
        schema = with_dataset_names(load_yaml(config_dir / "schema.yaml"), DATASETS.names())
        config = values.coerce(config, with_settings(schema, json_schema(OPTIMISERS.names())))
        preset = deep_merge(base, config)
        preset["preset"] = name
        try:
            jsonschema.validate(preset, schema)
        except jsonschema.ValidationError as error:
            where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            raise ConfigError(f"config of preset {name!r}, key {where}: {error.message}{schema_hint(error)}") from None
        preset["data"]["root"] = os.path.normpath(preset["data"]["root"])  # data/, ./data: one folder, one run
        plan = cls(config_dir, preset)
        plan.preset_file = None if given is None else preset_file.resolve()
        return plan

    def _load_experiments(self) -> dict:
        experiments: dict = {}
        self.sources: dict[str, Path] = {}  # experiment id → its catalogue file (named by errors)
        for path in sorted((self.config_dir / "experiments").glob("*.yaml")):
            for key, value in load_yaml(path, keep_digits=True).items():
                if key in experiments:
                    raise ConfigError(f"experiment {key!r} is defined twice ({path})")
                self.sources[key] = path
                experiments[key] = (
                    {part: entry if part in PAPER_NUMBERS else plain_numbers(entry) for part, entry in value.items()}
                    if isinstance(value, dict)
                    else value
                )
        return experiments

    def method_of(self, name: str, where: str) -> dict:
        """The catalogue's method `name`; unknown names are refused naming `where`."""
        if name not in self.methods:
            raise ConfigError(
                f"{where}: unknown method {name!r}{did_you_mean(name, self.methods)}; known: {', '.join(self.methods)}"
            )
        return self.methods[name]

    # --- expansion -------------------------------------------------------------------------

    def is_analysis(self, experiment: str) -> bool:
        """CPU-exact experiments (`kind: analysis`) compute a figure from formulas, no training."""
        return self.experiments[experiment].get("kind") == "analysis"

    @property
    def chosen_ids(self) -> list[str]:
        """The experiments the preset (and the command line) name, whether or not they have runs."""
        chosen = self.preset["experiments"]
        return sorted(self.experiments) if chosen == "all" else list(chosen)

    @property
    def experiment_ids(self) -> list[str]:
        """The chosen experiments that have something to do (analyses, or at least one run)."""
        return [key for key in self.chosen_ids if key not in self.skipped]

    def _experiments_without_runs(self) -> dict[str, str]:
        """Chosen training experiments left without a run by `datasets`/`subset`, with the reason."""
        skipped = {}
        for key in self.chosen_ids:
            has_work = self.fair_pairs(key) if self.is_fair(key) else self.runs(key)
            if not self.is_analysis(key) and not has_work:
                own = self._subset(key).get("datasets") or self.experiments[key]["datasets"]
                skipped[key] = f"none of its datasets {own} is among datasets={self.preset['datasets']}"

        if len(skipped) == len(self.chosen_ids):
            raise ConfigError(
                f"preset {self.name}: nothing to run: " + "; ".join(f"{key}: {why}" for key, why in skipped.items())
            )
        return skipped

    def _subset(self, experiment: str) -> dict:
        return (self.preset.get("subset") or {}).get(experiment) or {}

    def datasets_of(self, experiment: str) -> list[str]:
        datasets = self.experiments[experiment].get("datasets", [])
        restrict = self.preset["datasets"]
        chosen = self._subset(experiment).get("datasets")
        return [d for d in datasets if (restrict is None or d in restrict) and (chosen is None or d in chosen)]

    def variants(self, experiment: str) -> list[str]:
        """The sweep variants of `experiment` this preset runs (none for an experiment without a sweep)."""
        chosen = self._subset(experiment).get("variants")
        return [v for v in self.experiments[experiment].get("sweep") or {} if chosen is None or v in chosen]

    def runs(self, experiment: str | None = None) -> list[Run]:
        out = []
        for key in [experiment] if experiment else self.chosen_ids:
            if self.is_analysis(key) or self.is_fair(key):
                continue  # analyses train nothing; fair experiments: `fair_runs`
            if self.is_knobs(key):
                out += list(self.knob_run_index(key))
                continue
            exp = self.experiments[key]
            subset = self._subset(key)
            seeds, per_cell = self.seeds_of(key)
            variants = self.variants(key) or [None]
            methods = [m for m in exp["methods"] if subset.get("methods") is None or m in subset["methods"]]
            for dataset in self.datasets_of(key):
                for method in methods:
                    for variant in variants:
                        name = f"{method}@{variant}" if variant else method
                        out += [Run(key, dataset, name, seed) for seed in per_cell.get((name, dataset), seeds)]
        return out

    def seeds_of(self, experiment: str) -> tuple[list[int], dict[tuple[str, str], list[int]]]:
        """The experiment's seeds, and (row, dataset) → the seeds of a cell its `claim_seeds` give
        more (none where the preset's or the subset's `seeds` replace them all) or a second wave adds."""
        given = self._subset(experiment).get("seeds") or self.preset["seeds"]
        exp = self.experiments[experiment]
        base = given or exp.get("seeds") or [0]  # and the second wave's seeds, once planned
        first = second_wave.wave_one_claim_seeds(self)  # the rest of claim_seeds: the second wave's to give
        return base, second_wave.add(self, experiment, base, {} if given else claim_seeds.cells(exp, first))

    def all_runs(self) -> list[Run]:
        """Every run of the plan: the experiments' runs and the fair experiments' fold trainings."""
        return self.runs() + self.fair_runs()

    def trainings(self) -> list[Run]:
        """`all_runs` without the runs that link to an earlier run's training (`run_dedup`)."""
        return [run for run in self.all_runs() if self.trained_as(run) == run]

    @property
    def datasets(self) -> list[str]:
        return sorted({run.dataset for run in self.runs()})

    @property
    def cpu_fallback(self) -> dict | None:
        """The preset's `cpu_fallback` settings when this machine has no CUDA device (asked once)."""
        fallback = self.preset.get("cpu_fallback")
        if not fallback:
            return None
        if not hasattr(self, "_cuda"):
            import torch  # only presets with a fallback pay for the import

            self._cuda = torch.cuda.is_available()
        return None if self._cuda else fallback

    @property
    def toy_data(self) -> bool:
        """Fixtures: numbers that say nothing about the methods, not comparable with the papers."""
        return self.preset["data"]["source"] == "fixture"

    def find_run(self, experiment: str, dataset: str, method: str, seed: int) -> Run:
        run = Run(experiment, dataset, method, int(seed))
        key = experiment if experiment in self.experiments else None
        known = self.__dict__.setdefault("_run_sets", {})  # asked once per train job
        if key not in known:
            known[key] = set(self.runs(key))
        if run not in known[key]:
            raise ConfigError(f"preset {self.name} has no run {run}")
        return run
