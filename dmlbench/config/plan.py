"""From a preset and the experiment catalogue to the list of runs and each run's resolved config.

The catalogue lives in `workflow/config/`: `defaults.yaml` (every training setting),
`methods.yaml`, `experiments/<paper>.yaml` (ids from REPRODUCTION.md) and `presets/<name>.yaml`.
A run's settings are merged in this order: defaults < experiment `train` < experiment
`per_dataset[dataset]` < method `train` < preset `overrides` < preset `subset[experiment].train`
< sweep variant `train`. The swept setting comes last because it is the experiment's x axis: a
preset shrinks a sweep by choosing variants (`subset`), it cannot flatten it.
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml

from dmlbench import settings
from dmlbench.evaluation import reference
from dmlbench.data.datasets import DATASETS
from dmlbench.errors import ConfigError

EXPERIMENT_KEYS = {"layout", "title", "paper", "datasets", "methods", "seeds", "train", "per_dataset",
                   "table", "reported", "quoted", "kind", "analysis", "sweep", "plot", "figures"}
SWEEP_KEYS = {"train", "loss", "miner"}
FIGURES = {"triplet_scatter", "triplet_moves"}  # extra figures drawn from what runs record
ANALYSIS_KEYS = {"title", "paper", "kind", "analysis", "methods", "loss_overrides"}
METHOD_KEYS = {"label", "paper", "loss", "miner", "sampler", "train"}
SETTINGS_SCHEMA = "settings.schema.yaml"


@dataclass(frozen=True, order=True)
class Run:
    """One training run. `method` may carry a sweep variant: `dro_topk_m@B80`."""

    experiment: str
    dataset: str
    method: str
    seed: int

    @property
    def base_method(self) -> str:
        return self.method.split("@")[0]

    @property
    def variant(self) -> str | None:
        return self.method.split("@")[1] if "@" in self.method else None

    def path(self, preset: str) -> str:
        return f"results/{preset}/{self.experiment}/{self.dataset}/{self.method}/seed{self.seed}"


def _load_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {error}") from None
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of keys to values (key: value lines), "
                          f"not a {type(data).__name__}")
    return data or {}


def deep_merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in (update or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _with_settings(preset_schema: dict, settings_schema: dict) -> dict:
    """The preset schema with `overrides` and `subset.*.train` typed as training settings
    (used to convert command-line text, not to name unknown keys: `check_keys` does that)."""
    schema = copy.deepcopy(preset_schema)
    partial = {k: v for k, v in settings_schema.items() if k not in ("$schema", "$defs")}
    schema["$defs"] = settings_schema.get("$defs", {})
    schema["properties"]["overrides"] = partial
    schema["properties"]["subset"]["additionalProperties"]["properties"]["train"] = partial
    return schema


def check_keys(update: dict, reference: dict, where: str) -> None:
    """Every key of `update` must exist in `reference` (recursively); name the first that does not."""
    for key, value in (update or {}).items():
        if key not in reference:
            close = difflib.get_close_matches(str(key), list(reference), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where}: unknown setting {key!r}{hint}; known: {', '.join(reference)}")
        if isinstance(value, dict) and isinstance(reference[key], dict):
            check_keys(value, reference[key], f"{where}.{key}")


class Plan:
    """The preset, the catalogue, the runs they expand into, and each run's resolved config."""

    def __init__(self, config_dir: Path, preset: dict):
        self.config_dir = Path(config_dir)
        self.preset = preset
        self.name = preset["preset"]
        self.defaults = _load_yaml(self.config_dir / "defaults.yaml")
        self.settings_schema = _load_yaml(self.config_dir / SETTINGS_SCHEMA)
        self.methods = _load_yaml(self.config_dir / "methods.yaml")
        self.papers = _load_yaml(self.config_dir / "papers.yaml")
        self.experiments = self._load_experiments()
        self._check_catalogue()
        self._check_preset()
        self.skipped = self._experiments_without_runs()
        self._check_runs()

    @classmethod
    def load(cls, config_dir: str | Path, config: dict | None = None) -> "Plan":
        """Load preset `config["preset"]` (default `full`), merge `config` over it, validate."""
        config = dict(config or {})
        config_dir = Path(config_dir)
        name = config.get("preset", "full")
        preset_file = config_dir / "presets" / f"{name}.yaml"
        if not preset_file.exists():
            known = sorted(p.stem for p in (config_dir / "presets").glob("*.yaml"))
            raise ConfigError(f"unknown preset {name!r}; known: {', '.join(known)}")
        schema = _load_yaml(config_dir / "schema.yaml")
        config = settings.coerce(config, _with_settings(schema, _load_yaml(config_dir / SETTINGS_SCHEMA)))
        preset = deep_merge(_load_yaml(preset_file), config)
        preset["preset"] = name
        try:
            jsonschema.validate(preset, schema)
        except jsonschema.ValidationError as error:
            where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            raise ConfigError(f"config of preset {name!r}, key {where}: {error.message}") from None
        return cls(config_dir, preset)

    def _load_experiments(self) -> dict:
        experiments: dict = {}
        for path in sorted((self.config_dir / "experiments").glob("*.yaml")):
            for key, value in _load_yaml(path).items():
                if key in experiments:
                    raise ConfigError(f"experiment {key!r} is defined twice ({path})")
                experiments[key] = value
        return experiments

    def _check_catalogue(self) -> None:
        from dmlbench.analysis import ANALYSES

        self._check_settings(self.defaults, "defaults.yaml")
        for key, exp in self.experiments.items():
            where = f"experiment {key}"
            if self.is_analysis(key):
                unknown = set(exp) - ANALYSIS_KEYS
                if unknown or exp.get("analysis") not in ANALYSES:
                    raise ConfigError(f"{where}: an analysis takes keys {sorted(ANALYSIS_KEYS)} and "
                                      f"`analysis` one of {sorted(ANALYSES)}")
                for method in list(exp.get("methods") or []) + list(exp.get("loss_overrides") or {}):
                    self._method(method, where)
                continue
            unknown = set(exp) - EXPERIMENT_KEYS
            if unknown:
                raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
            for dataset in exp["datasets"]:
                if dataset not in DATASETS:
                    raise ConfigError(f"{where}: unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
            for method in exp["methods"]:
                self._method(method, where)
            self._check_settings(exp.get("train"), f"{where}.train")
            for dataset, values in (exp.get("per_dataset") or {}).items():
                self._check_settings(values, f"{where}.per_dataset.{dataset}")
            table = exp.get("table") or {}
            if not set(table) <= {"metrics", "test_selected"}:
                raise ConfigError(f"{where}.table: keys must be among ['metrics', 'test_selected'], "
                                  f"not {sorted(table)}")
            if set(table.get("test_selected") or []) - {"recall@1"}:
                raise ConfigError(f"{where}.table.test_selected: only recall@1 (the epoch is chosen "
                                  f"by it), not {table['test_selected']}")
            for name in exp.get("figures") or []:
                if name not in FIGURES:
                    raise ConfigError(f"{where}.figures: unknown figure {name!r}; known: {sorted(FIGURES)}")
            self._check_reported(exp, where)
            self._check_layout(exp, where)
            for label, entry in (exp.get("sweep") or {}).items():
                if not set(entry) <= SWEEP_KEYS:
                    raise ConfigError(f"{where}.sweep.{label}: keys must be among {sorted(SWEEP_KEYS)}")
                self._check_settings(entry.get("train"), f"{where}.sweep.{label}.train")
                without = [m for m in exp["methods"] if entry.get("miner") and not self.methods[m].get("miner")]
                if without:
                    raise ConfigError(f"{where}.sweep.{label}: sets miner options but method "
                                      f"{without[0]} has no miner")
        for name, method in self.methods.items():
            unknown = set(method) - METHOD_KEYS
            if unknown:
                raise ConfigError(f"method {name}: unknown keys {sorted(unknown)}")
            self._check_settings(method.get("train"), f"method {name}.train")

    @staticmethod
    def _check_reported(exp: dict, where: str) -> None:
        """The paper's numbers name a run of the experiment (a method, or method@variant of a
        sweep), one of its datasets and a metric of its table."""
        labels = set(exp["methods"]) | {f"{m}@{v}" for m in exp["methods"] for v in exp.get("sweep") or {}}
        metrics = set((exp.get("table") or {}).get("metrics") or [])
        for method, per_dataset in (exp.get("reported") or {}).items():
            if method not in labels:
                raise ConfigError(f"{where}.reported: {method!r} is none of the experiment's runs "
                                  f"({', '.join(sorted(labels))})")
            for dataset, values in per_dataset.items():
                if dataset not in exp["datasets"]:
                    raise ConfigError(f"{where}.reported.{method}: dataset {dataset!r} is not among "
                                      f"the experiment's datasets {exp['datasets']}")
                extra = sorted(set(values) - metrics) if metrics else []
                if extra:
                    raise ConfigError(f"{where}.reported.{method}.{dataset}: {extra} not among the "
                                      f"table's metrics {sorted(metrics)}")

    @staticmethod
    def _check_layout(exp: dict, where: str) -> None:
        """`layout.rows` lists every method and quoted row of the table once, in the paper's order."""
        layout = exp.get("layout")
        if not layout:
            return
        extra = set(layout) - {"rows", "labels", "datasets", "datasets_as_rows"}
        if extra:
            raise ConfigError(f"{where}.layout: unknown keys {sorted(extra)}; known: rows, labels, "
                              f"datasets, datasets_as_rows")
        expected = list(exp.get("quoted") or {}) + list(exp["methods"])
        rows = layout.get("rows") or expected
        missing = [r for r in expected if r not in rows]
        unknown = [r for r in rows if r not in expected]
        repeated = sorted({r for r in rows if rows.count(r) > 1})
        if missing or unknown or repeated:
            raise ConfigError(f"{where}.layout.rows must list each method and quoted row once: "
                              + "; ".join(f"{what} {names}" for what, names in
                                          (("missing", missing), ("unknown", unknown), ("repeated", repeated))
                                          if names))
        for key, known, what in (("labels", exp["methods"], "methods"), ("datasets", exp["datasets"], "datasets")):
            stray = sorted(set(layout.get(key) or {}) - set(known))
            if stray:
                raise ConfigError(f"{where}.layout.{key}: {stray} are not among the experiment's {what}")

    def _check_settings(self, update: dict | None, where: str) -> None:
        """Names of `update` exist in defaults.yaml, and its values have their type and range."""
        check_keys(update, self.defaults, where)
        settings.check(update, self.settings_schema, where)

    def _method(self, name: str, where: str) -> dict:
        if name not in self.methods:
            close = difflib.get_close_matches(name, list(self.methods), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where}: unknown method {name!r}{hint}; known: {', '.join(self.methods)}")
        return self.methods[name]

    def _check_preset(self) -> None:
        chosen = self.preset["experiments"]
        if chosen != "all":
            for key in chosen:
                if key not in self.experiments:
                    close = difflib.get_close_matches(key, list(self.experiments), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    raise ConfigError(f"preset {self.name}: unknown experiment id {key!r}{hint}; "
                                      f"known: {', '.join(sorted(self.experiments))}")
        self._check_settings(self.preset["overrides"], f"preset {self.name}.overrides")
        self._check_settings(self.preset.get("cpu_fallback"), f"preset {self.name}.cpu_fallback")
        for dataset, update in (self.preset.get("per_dataset") or {}).items():
            self._check_settings(update, f"preset {self.name}.per_dataset.{dataset}")
        for key, subset in (self.preset.get("subset") or {}).items():
            where = f"preset {self.name}.subset.{key}"
            if key not in self.experiments or self.is_analysis(key):
                raise ConfigError(f"{where}: {key!r} is not a training experiment of the catalogue")
            if key not in self.chosen_ids:
                continue  # the preset was narrowed to other experiments
            exp = self.experiments[key]
            for field, known in (("datasets", exp["datasets"]), ("methods", exp["methods"]),
                                 ("variants", list(exp.get("sweep") or {}))):
                unknown = set(subset.get(field) or []) - set(known)
                if unknown:
                    raise ConfigError(f"{where}.{field}: {sorted(unknown)} not in the experiment's "
                                      f"{field} {known}")
            self._check_settings(subset.get("train"), f"{where}.train")

    # --- expansion -------------------------------------------------------------------------

    def is_analysis(self, experiment: str) -> bool:
        """CPU-exact experiments (`kind: analysis`) compute a figure from formulas, no training."""
        return self.experiments[experiment].get("kind") == "analysis"

    def report_marker(self, experiment: str) -> str:
        """The file whose presence says the experiment's report folder is complete."""
        name = "summary.md" if self.is_analysis(experiment) else "table.csv"
        return f"reports/{self.name}/{experiment}/{name}"

    def analysis_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        overrides = exp.get("loss_overrides") or {}
        methods = {name: {"label": self.methods[name].get("label", name),
                          "loss": deep_merge(self.methods[name]["loss"], overrides.get(name)),
                          "miner": self.methods[name].get("miner")}
                   for name in exp.get("methods") or []}
        return {"experiment": experiment, "title": exp.get("title", experiment),
                "paper": exp.get("paper"), "analysis": exp["analysis"], "methods": methods}

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
            if not self.is_analysis(key) and not self.runs(key):
                own = self._subset(key).get("datasets") or self.experiments[key]["datasets"]
                skipped[key] = f"none of its datasets {own} is among datasets={self.preset['datasets']}"

        if len(skipped) == len(self.chosen_ids):
            raise ConfigError(f"preset {self.name}: nothing to run: " + "; ".join(
                f"{key}: {why}" for key, why in skipped.items()))
        return skipped

    def _check_runs(self) -> None:
        """Every resolved run's settings, by value, before any job starts."""
        for run in self.runs():
            cfg = self.resolve(run)
            where = f"run {run.path(self.name)}"
            settings.check({k: cfg[k] for k in self.defaults}, self.settings_schema, where)
            settings.check_run(cfg, where)
            self._check_classes(cfg, run.dataset, where)
            if (self.experiments[run.experiment].get("table") or {}).get("test_selected") \
                    and not cfg["eval"]["every"]:
                raise ConfigError(f"{where}: the table of {run.experiment} shows a test-selected "
                                  f"epoch, which needs eval.every ≥ 1 (now 0)")

    def _check_classes(self, cfg: dict, dataset: str, where: str) -> None:
        """A batch of batch.size / per_class classes needs that many training classes (the real
        dataset's count; fixtures are checked by the tests on their own sizes)."""
        if self.toy_data or cfg["method"]["sampler"] != "m_per_class" or cfg["scheme"]["name"] != "plain":
            return
        needed = cfg["batch"]["size"] // cfg["batch"]["per_class"]
        available = DATASETS[dataset].expected.classes["train"]
        if needed > available:
            raise ConfigError(f"{where}: batch.size {cfg['batch']['size']} at batch.per_class "
                              f"{cfg['batch']['per_class']} needs {needed} classes, but {dataset}'s "
                              f"training split has {available}: raise batch.per_class or lower batch.size")

    def _subset(self, experiment: str) -> dict:
        return (self.preset.get("subset") or {}).get(experiment) or {}

    def datasets_of(self, experiment: str) -> list[str]:
        datasets = self.experiments[experiment].get("datasets", [])
        restrict = self.preset["datasets"]
        chosen = self._subset(experiment).get("datasets")
        return [d for d in datasets
                if (restrict is None or d in restrict) and (chosen is None or d in chosen)]

    def runs(self, experiment: str | None = None) -> list[Run]:
        out = []
        for key in [experiment] if experiment else self.chosen_ids:
            if self.is_analysis(key):
                continue
            exp = self.experiments[key]
            seeds = self.preset["seeds"] or exp.get("seeds") or [0]
            subset = self._subset(key)
            variants = [v for v in exp.get("sweep") or {}
                        if subset.get("variants") is None or v in subset["variants"]] or [None]
            methods = [m for m in exp["methods"]
                       if subset.get("methods") is None or m in subset["methods"]]
            for dataset in self.datasets_of(key):
                for method in methods:
                    for variant in variants:
                        name = f"{method}@{variant}" if variant else method
                        out += [Run(key, dataset, name, seed) for seed in seeds]
        return out

    @property
    def datasets(self) -> list[str]:
        return sorted({run.dataset for run in self.runs()})

    # --- paths and per-step specs ----------------------------------------------------------

    @property
    def data_dir(self) -> str:
        return f"{self.preset['data']['root']}/{self.preset['data']['source']}"

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

    def store_marker(self, run: Run) -> list[str]:
        """The store file a run's training needs (none without a store)."""
        folder = self.resolve(run)["data"].get("store")
        return [f"{folder}/store.json"] if folder else []

    def prepare_spec(self, dataset: str) -> dict:
        data = self.preset["data"]
        return {"dataset": dataset, "source": data["source"], "root": data["root"],
                "path": data["paths"].get(dataset), "download": data["download"],
                "fixture": data.get("fixture")}

    def resolve(self, run: Run) -> dict:
        """The complete settings of one run, as training reads them."""
        exp = self.experiments[run.experiment]
        method = self._method(run.base_method, f"experiment {run.experiment}")
        sweep = (exp.get("sweep") or {}).get(run.variant) or {}
        cfg = deep_merge(self.defaults, exp.get("train"))
        cfg = deep_merge(cfg, (exp.get("per_dataset") or {}).get(run.dataset))
        cfg = deep_merge(cfg, method.get("train"))
        cfg = deep_merge(cfg, self.preset["overrides"])
        cfg = deep_merge(cfg, (self.preset.get("per_dataset") or {}).get(run.dataset))
        cfg = deep_merge(cfg, self.cpu_fallback)
        cfg = deep_merge(cfg, self._subset(run.experiment).get("train"))
        cfg = deep_merge(cfg, sweep.get("train"))
        miner = deep_merge(method["miner"], sweep["miner"]) if sweep.get("miner") else method.get("miner")
        cfg["method"] = {"name": run.method, "loss": deep_merge(method["loss"], sweep.get("loss")),
                         "miner": miner,
                         "sampler": method.get("sampler", "m_per_class")}
        cfg["seed"] = run.seed
        cfg["run"] = {"preset": self.name, "experiment": run.experiment, "dataset": run.dataset,
                      "method": run.method, "seed": run.seed}
        cfg["data"] = {"manifest": self.manifest(run.dataset)}
        store = self.store(run.dataset, cfg["input"]["resize"])
        if store:
            cfg["data"]["store"] = store
        return cfg

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

    def aggregate_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        return {"experiment": experiment, "title": exp.get("title", experiment), "toy_data": self.toy_data,
                "paper": exp.get("paper"), "table": exp.get("table", {}),
                "reported": exp.get("reported", {}), "quoted": exp.get("quoted", {}),
                "method_labels": {run.method: self._label(run) for run in self.runs(experiment)},
                "plot": exp.get("plot"), "figures": exp.get("figures") or [],
                "datasets": self.datasets_of(experiment),
                "reference_of": [[d, m, name] for (d, m), name in self.reference_map(experiment).items()]}

    # --- reference rows (embeddings before any training step) ------------------------------

    def reference_map(self, experiment: str) -> dict[tuple[str, str], str]:
        """(dataset, method) → the name of the reference its table rows are compared with: the
        run of the experiment's first seed."""
        runs = self.runs(experiment)
        first = min((run.seed for run in runs), default=0)
        return {(run.dataset, run.method): reference.name_of(self._reference_key(run))
                for run in runs if run.seed == first}

    def _reference_key(self, run: Run) -> dict:
        return reference.key_of(self.resolve(run), DATASETS[run.dataset].pixel_side,
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
        return reference.spec_of(self.resolve(run), self._reference_key(run))

    def reference_inputs(self, name: str) -> list[str]:
        """The files a reference job reads: the runs' manifest (and store), the raw one for pixels."""
        run = self._run_of_reference(name)
        inputs = [self.manifest(run.dataset), *self.store_marker(run)]
        if DATASETS[run.dataset].pixel_side:
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

    def find_run(self, experiment: str, dataset: str, method: str, seed: int) -> Run:
        run = Run(experiment, dataset, method, int(seed))
        if run not in self.runs(experiment if experiment in self.experiments else None):
            raise ConfigError(f"preset {self.name} has no run {run}")
        return run
