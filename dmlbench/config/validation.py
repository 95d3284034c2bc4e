"""Validation of the catalogue, the preset and every resolved run, before any job starts: unknown
names are refused with the closest known one, values are checked by type and range."""

from __future__ import annotations

from dmlbench import settings
from dmlbench.analysis import ANALYSES
from dmlbench.config.loading import check_keys, deep_merge
from dmlbench.data.datasets import DATASETS
from dmlbench.errors import ConfigError
from dmlbench.methods import declared
from dmlbench.models import timm_trunks
from dmlbench.plots import FIGURES
from dmlbench.registry import did_you_mean
from dmlbench.verdicts import claims

EXPERIMENT_KEYS = {"layout", "title", "paper", "datasets", "methods", "seeds", "train", "per_dataset",
                   "table", "reported", "quoted", "kind", "analysis", "sweep", "plot", "figures", "fair",
                   "necessities", "paper_numbers", "omitted", "claims", "tolerance"}
SWEEP_KEYS = {"train", "loss", "miner"}
MAX_SEED = 2**32 - 1  # numpy's seeds (the preset's `seeds`: schema.yaml)
ANALYSIS_KEYS = {"title", "paper", "kind", "analysis", "methods", "loss_overrides"}
METHOD_KEYS = {"label", "paper", "loss", "miner", "sampler", "train", "search"}


def check_catalogue(plan) -> None:
    check_settings(plan, plan.defaults, "defaults.yaml")
    check_methods(plan)
    for key, exp in plan.experiments.items():
        where = f"{plan.sources[key]}: experiment {key}"
        if plan.is_analysis(key):
            unknown = set(exp) - ANALYSIS_KEYS
            if unknown or exp.get("analysis") not in ANALYSES:
                raise ConfigError(f"{where}: an analysis takes keys {sorted(ANALYSIS_KEYS)} and "
                                  f"`analysis` one of {ANALYSES.names()}")
            for method in list(exp.get("methods") or []) + list(exp.get("loss_overrides") or {}):
                plan.method_of(method, where)
            for method, override in (exp.get("loss_overrides") or {}).items():
                declared.check("loss", deep_merge(plan.methods[method]["loss"], override),
                               f"{where}.loss_overrides.{method}")
            continue
        unknown = set(exp) - EXPERIMENT_KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
        seeds = exp.get("seeds")
        if seeds is not None and not (isinstance(seeds, list) and seeds and all(
                type(s) is int and 0 <= s <= MAX_SEED for s in seeds)):
            raise ConfigError(f"{where}.seeds: a list of whole numbers from 0 to {MAX_SEED}, not {seeds!r}")
        for dataset in exp["datasets"]:
            DATASETS.check(dataset, where, ConfigError)
        for method in exp["methods"]:
            plan.method_of(method, where)
        check_settings(plan, exp.get("train"), f"{where}.train")
        for dataset, values in (exp.get("per_dataset") or {}).items():
            check_settings(plan, values, f"{where}.per_dataset.{dataset}")
        table = exp.get("table") or {}
        if not set(table) <= {"metrics", "test_selected"}:
            raise ConfigError(f"{where}.table: keys must be among ['metrics', 'test_selected'], "
                              f"not {sorted(table)}")
        unselectable = [m for m in table.get("test_selected") or []
                        if not m.startswith("recall@") or m not in (table.get("metrics") or [])]
        if unselectable:
            raise ConfigError(f"{where}.table.test_selected: {unselectable}: only the table's recall@K "
                              f"(the epoch is chosen by recall@1, and only recall@K is measured every epoch)")
        for name in exp.get("figures") or []:
            FIGURES.check(name, f"{where}.figures", ConfigError)
        check_reported(exp, where)
        claims.check(exp, f"{where}")
        check_tolerance(exp, f"{where}")
        check_layout(exp, where)
        check_title(plan, exp, where)
        ranked = "trunk_ranking" in (exp.get("figures") or [])
        if exp.get("kind") == "fair":
            check_fair(plan, key, where)
        elif {"fair", "necessities", "omitted"} & set(exp) or exp.get("kind") is not None:
            raise ConfigError(f"{where}: `kind` is analysis or fair, and only a fair experiment has `fair`, "
                              f"`necessities` and `omitted`")
        elif ranked or "paper_numbers" in exp:
            if not (ranked and exp.get("sweep")):
                raise ConfigError(f"{where}: `paper_numbers` belong to a fair experiment or to one whose "
                                  f"figures include trunk_ranking, with a sweep over trunks; and such a "
                                  f"figure needs both")
            from dmlbench.config import fair_catalogue

            fair_catalogue.check_paper_numbers(plan, key, where)
        for label, entry in (exp.get("sweep") or {}).items():
            if not set(entry) <= SWEEP_KEYS:
                raise ConfigError(f"{where}.sweep.{label}: keys must be among {sorted(SWEEP_KEYS)}")
            check_settings(plan, entry.get("train"), f"{where}.sweep.{label}.train")
            without = [m for m in exp["methods"] if entry.get("miner") and not plan.methods[m].get("miner")]
            if without:
                raise ConfigError(f"{where}.sweep.{label}: sets miner options but method "
                                  f"{without[0]} has no miner")
            for part in ("loss", "miner"):
                for method in exp["methods"] if entry.get(part) else []:
                    declared.check(part, deep_merge(plan.methods[method][part], entry[part]),
                                   f"{where}.sweep.{label}.{part} (method {method})")
    claims.check_ids(plan.experiments, lambda key: plan.sources[key])


def check_methods(plan) -> None:
    """Every method of methods.yaml: its keys, its loss, miner and sampler (registered names, the
    parameters their constructors take: `dmlbench.methods.declared`), the loss and miner
    parameters its search space names, and its training settings."""
    source = plan.config_dir / "methods.yaml"
    for name, method in plan.methods.items():
        where = f"{source}: method {name}"
        unknown = set(method) - METHOD_KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)}{did_you_mean(min(unknown), METHOD_KEYS)}")
        if "loss" not in method:
            raise ConfigError(f"{where}: a method needs a loss (loss: {{name: …, <parameter>: …}})")
        declared.check_method(method, where)
        for path in method.get("search") or {}:
            part, _, param = path.partition(".")
            if part in ("loss", "miner") and isinstance(method.get(part), dict):
                declared.check_params(part, method[part]["name"], [param], f"{where}.search: {part}")
        check_settings(plan, method.get("train"), f"{where}.train")


def check_fair_settings(values: dict, where: str, complete: bool) -> None:
    """folds, trials, parallel, repetitions: integers at least their least value."""
    from dmlbench.config.fair_specs import FAIR_KEYS

    unknown = set(values) - set(FAIR_KEYS)
    missing = set(FAIR_KEYS) - set(values) if complete else set()
    if unknown or missing:
        raise ConfigError(f"{where}: keys are {sorted(FAIR_KEYS)}; "
                          + "; ".join(f"{what} {sorted(names)}" for what, names in
                                      (("unknown", unknown), ("missing", missing)) if names))
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < FAIR_KEYS[key]:
            raise ConfigError(f"{where}.{key}: an integer ≥ {FAIR_KEYS[key]}, not {value!r}")


def check_fair(plan, key: str, where: str) -> None:
    """A fair experiment: its protocol settings, every method searchable with no recipe of its own
    beyond its documented necessities, and every method's paper number named (`fair_catalogue`)."""
    from dmlbench.config import fair_catalogue

    exp = plan.experiments[key]
    check_fair_settings(exp.get("fair") or {}, f"{where}.fair", complete=True)
    for method in exp["methods"]:
        plan.fair_space(method)  # refuses a method without a search space, naming it
    fair_catalogue.check_method_train(plan, key, where)
    fair_catalogue.check_paper_numbers(plan, key, where)
    fair_catalogue.check_omitted(plan, key, where)


def check_reported(exp: dict, where: str) -> None:
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


def check_tolerance(exp: dict, where: str) -> None:
    """`tolerance`: the band (points, ≥ 0) of the verdicts on the paper's numbers, one number or
    one per metric of the table (`dmlbench.verdicts.numbers`)."""
    tolerance = exp.get("tolerance")
    if tolerance is None:
        return
    metrics = (exp.get("table") or {}).get("metrics") or []
    values = tolerance if isinstance(tolerance, dict) else {"": tolerance}
    for metric, value in values.items():
        if metric and metric not in metrics:
            raise ConfigError(f"{where}.tolerance: {metric!r} is not in the table's metrics ({', '.join(metrics)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"{where}.tolerance{'.' + metric if metric else ''}: a number of points ≥ 0 "
                              f"(or one per metric), not {value!r}")


def check_title(plan, exp: dict, where: str) -> None:
    """Each `{setting.path}` of a title names a training setting (defaults.yaml's keys)."""
    from dmlbench.config.steps import TITLE_SETTING

    for path in TITLE_SETTING.findall(exp.get("title") or ""):
        value = plan.defaults
        for part in path.split("."):
            if not isinstance(value, dict) or part not in value:
                raise ConfigError(f"{where}.title: {{{path}}} is no training setting; name a key path of "
                                  f"defaults.yaml (e.g. {{record.scatter_epochs}}) or write the value")
            value = value[part]


def check_layout(exp: dict, where: str) -> None:
    """`layout.rows` lists every method and quoted row of the table once, in the paper's order
    (a quoted row `joined` to a method's row is not a row of its own); the other keys name the
    experiment's methods, quoted rows, datasets, metrics and columns."""
    layout = exp.get("layout")
    if not layout:
        return
    known_keys = ["rows", "labels", "datasets", "metrics", "joined", "bands", "notes", "datasets_as_rows"]
    extra = set(layout) - set(known_keys)
    if extra:
        raise ConfigError(f"{where}.layout: unknown keys {sorted(extra)}; known: {', '.join(known_keys)}")
    joined = layout.get("joined") or {}
    quoted = list(exp.get("quoted") or {})
    for method, row in joined.items():
        if method not in exp["methods"] or row not in quoted:
            raise ConfigError(f"{where}.layout.joined: {method}: {row!r} must join a method of the "
                              f"experiment to one of its quoted rows ({', '.join(quoted) or 'none'})")
    expected = [q for q in quoted if q not in joined.values()] + list(exp["methods"])
    rows = layout.get("rows") or expected
    missing = [r for r in expected if r not in rows]
    unknown = [r for r in rows if r not in expected]
    repeated = sorted({r for r in rows if rows.count(r) > 1})
    if missing or unknown or repeated:
        raise ConfigError(f"{where}.layout.rows must list each method and quoted row once: "
                          + "; ".join(f"{what} {names}" for what, names in
                                      (("missing", missing), ("unknown", unknown), ("repeated", repeated))
                                      if names))
    metrics = (exp.get("table") or {}).get("metrics") or []
    for key, known, what in (("labels", exp["methods"], "methods"), ("datasets", exp["datasets"], "datasets"),
                             ("metrics", metrics, "table metrics")):
        stray = sorted(set(layout.get(key) or {}) - set(known))
        if stray:
            raise ConfigError(f"{where}.layout.{key}: {stray} are not among the experiment's {what}")
    columns = rows if layout.get("datasets_as_rows") else exp["datasets"]
    banded = [key for keys in (layout.get("bands") or {}).values() for key in keys]
    for label, keys in (layout.get("bands") or {}).items():
        start = columns.index(keys[0]) if keys and keys[0] in columns else -1
        if start < 0 or list(columns[start:start + len(keys)]) != list(keys) or any(banded.count(k) > 1 for k in keys):
            raise ConfigError(f"{where}.layout.bands.{label}: {keys} must be consecutive columns of the "
                              f"table ({', '.join(columns)}), each under one band")


def check_settings(plan, update: dict | None, where: str) -> None:
    """Names of `update` exist in defaults.yaml, and its values have their type and range."""
    check_keys(update, plan.defaults, where)
    settings.check(update, plan.settings_schema, where)


def check_preset(plan) -> None:
    chosen = plan.preset["experiments"]
    if chosen != "all":
        for key in chosen:
            if key not in plan.experiments:
                raise ConfigError(f"preset {plan.name}: unknown experiment id {key!r}"
                                  f"{did_you_mean(key, plan.experiments)}; "
                                  f"known: {', '.join(sorted(plan.experiments))}")
    check_settings(plan, plan.preset["overrides"], f"preset {plan.name}.overrides")
    check_settings(plan, plan.preset.get("cpu_fallback"), f"preset {plan.name}.cpu_fallback")
    for dataset, update in (plan.preset.get("per_dataset") or {}).items():
        check_settings(plan, update, f"preset {plan.name}.per_dataset.{dataset}")
    for key, subset in (plan.preset.get("subset") or {}).items():
        where = f"preset {plan.name}.subset.{key}"
        if key not in plan.experiments or plan.is_analysis(key):
            raise ConfigError(f"{where}: {key!r} is not a training experiment of the catalogue")
        if key not in plan.chosen_ids:
            continue  # the preset was narrowed to other experiments
        exp = plan.experiments[key]
        for field, known in (("datasets", exp["datasets"]), ("methods", exp["methods"]),
                             ("variants", list(exp.get("sweep") or {}))):
            unknown = set(subset.get(field) or []) - set(known)
            if unknown:
                raise ConfigError(f"{where}.{field}: {sorted(unknown)} not in the experiment's "
                                  f"{field} {known}")
        check_settings(plan, subset.get("train"), f"{where}.train")
        if "fair" in subset:
            if not plan.is_fair(key):
                raise ConfigError(f"{where}.fair: {key} is not a fair experiment")
            check_fair_settings(subset["fair"], f"{where}.fair", complete=False)


def check_runs(plan) -> None:
    """Every resolved run's settings, by value, before any job starts."""
    for run in plan.runs():
        cfg = plan.resolve(run)
        where = f"run {run.path(plan.name)}"
        settings.check({k: cfg[k] for k in plan.defaults}, plan.settings_schema, where)
        settings.check_run(cfg, where)
        timm_trunks.check_settings(cfg, where)
        check_scheme_needs(cfg, where)
        check_classes(plan, cfg, run.dataset, where)
        if (plan.experiments[run.experiment].get("table") or {}).get("test_selected") \
                and not cfg["eval"]["every"]:
            raise ConfigError(f"{where}: the table of {run.experiment} shows a test-selected "
                              f"epoch, which needs eval.every ≥ 1 (now 0)")


def check_fair_runs(plan) -> None:
    """One fold training per fair experiment × dataset × method and stage (the others differ in
    fold and seed only), by value, with the paper's setting inside the method's search range."""
    from dmlbench.fair import space as spaces

    seen = set()
    for run in plan.fair_runs():
        if (run.experiment, run.dataset, run.method, run.stage) in seen:
            continue
        seen.add((run.experiment, run.dataset, run.method, run.stage))
        cfg = plan.resolve(run)
        where = f"fair run {run.path(plan.name)}"
        settings.check({k: cfg[k] for k in plan.defaults}, plan.settings_schema, where)
        settings.check_run(cfg, where)
        timm_trunks.check_settings(cfg, where)
        check_scheme_needs(cfg, where)
        check_classes(plan, cfg, run.dataset, where)
        if not cfg["early_stopping"]["patience"]:
            raise ConfigError(f"{where}: the fair protocol selects each fold's epoch on its validation fold: "
                              f"set early_stopping.patience")
        spaces.check(run.method, plan.fair_space(run.method), cfg, where)


def check_scheme_needs(cfg: dict, where: str) -> None:
    """The PROFS scheme's needs of the loss, from what the loss declares: pairs to restrict
    (`scheme.pairs` representative or anchored, image representatives) and class centres (HNCM
    without image representatives)."""
    scheme = cfg["scheme"]
    if scheme["name"] != "profs":
        return
    loss = declared.components("loss")[cfg["method"]["loss"]["name"]]
    with_images = scheme["representatives"] == "images"
    if with_images and scheme["pairs"] in ("representative", "anchored") and not loss.restricts_pairs:
        raise ConfigError(f"{where}: scheme.pairs: {scheme['pairs']} needs a pair loss; {loss.name!r} has no "
                          f"pairs to restrict ({loss.source}): set scheme.pairs: all")
    if scheme["hncm"] and not with_images and not loss.class_vectors:
        raise ConfigError(f"{where}: scheme.hncm with representatives: none needs a loss with class centres "
                          f"(class_vectors(): {', '.join(n for n, c in declared.components('loss').items() if c.class_vectors)}), "
                          f"not {loss.name!r}")


def check_classes(plan, cfg: dict, dataset: str, where: str) -> None:
    """A batch of batch.size / per_class classes needs that many training classes (the real
    dataset's count; fixtures are checked by the tests on their own sizes)."""
    if plan.toy_data or cfg["method"]["sampler"] != "m_per_class" or cfg["scheme"]["name"] != "plain":
        return
    needed = cfg["batch"]["size"] // cfg["batch"]["per_class"]
    available = DATASETS.get(dataset).expected.classes["train"]
    if needed > available:
        raise ConfigError(f"{where}: batch.size {cfg['batch']['size']} at batch.per_class "
                          f"{cfg['batch']['per_class']} needs {needed} classes, but {dataset}'s "
                          f"training split has {available}: raise batch.per_class or lower batch.size")
