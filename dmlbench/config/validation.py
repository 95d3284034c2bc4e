"""Validation of the catalogue, the preset and every resolved run, before any job starts: unknown
names are refused with the closest known one, values are checked by type and range."""

from __future__ import annotations


from dmlbench.run_config import values
from dmlbench.analysis import ANALYSES
from dmlbench.config import claim_seeds, margins, method_checks, own_methods, search_checks, table_checks, trunk_digests
from dmlbench.config.loading import check_keys, deep_merge
from dmlbench.config.run import EXPERIMENT_ID, METHOD_ID, check_id
from dmlbench.data.datasets import DATASETS
from dmlbench.core.errors import ConfigError
from dmlbench.methods import declared
from dmlbench.plots import FIGURES
from dmlbench.core.registry import did_you_mean
from dmlbench.verdicts import claim_checks, claims
from dmlbench.config import seed_spread

EXPERIMENT_KEYS = {
    "layout",
    "title",
    "paper",
    "datasets",
    "methods",
    "seeds",
    "claim_seeds",
    "train",
    "per_dataset",
    "table",
    "reported",
    "quoted",
    "kind",
    "analysis",
    "sweep",
    "plot",
    "figures",
    "fair",
    "necessities",
    "paper_numbers",
    "omitted",
    "claims",
    "margin",
    "fair_methods",
}
SWEEP_KEYS = {"train", "loss", "miner"}
MAX_SEED = 2**32 - 1  # numpy's seeds (the preset's `seeds`: schema.yaml)
ANALYSIS_KEYS = {"title", "paper", "kind", "analysis", "methods", "loss_overrides"}
KNOB_KEYS = {"title", "paper", "kind", "datasets", "seeds", "stand_in"}
METHOD_KEYS = {"label", "paper", "loss", "miner", "sampler", "train", "per_dataset", "search"}


def _check_paper(plan, paper, where: str) -> None:
    """A paper id of papers.yaml, or null (the suite's own experiments, a user's method)."""
    if paper is not None and paper not in plan.papers:
        raise ConfigError(
            f"{where}: {paper!r} is no paper of {plan.config_dir / 'papers.yaml'}"
            f"{did_you_mean(str(paper), plan.papers)}; known: {', '.join(plan.papers)} "
            f"(a new paper is added there first: docs/howto/add-paper.md)"
        )


def check_catalogue(plan) -> None:
    check_settings(plan, plan.defaults, "dmlbench/run_config defaults")
    for name in plan.methods:
        check_id("method", name, METHOD_ID, f"{own_methods.source(plan, name)}")
    for key in plan.experiments:
        check_id("experiment", key, EXPERIMENT_ID, f"{plan.sources[key]}")
        for variant in plan.experiments[key].get("sweep") or {}:
            check_id("sweep variant", variant, METHOD_ID, f"{plan.sources[key]}: experiment {key}")
    method_checks.check_methods(plan, METHOD_KEYS)
    margins.default(plan.config_dir)
    seed_spread.catalogue(plan.config_dir)
    for name, method in plan.methods.items():
        _check_paper(plan, method.get("paper"), f"{own_methods.source(plan, name)}: method {name}.paper")
        check_settings(plan, method.get("train"), f"{own_methods.source(plan, name)}: method {name}.train")
        for dataset, own in (method.get("per_dataset") or {}).items():
            where = f"{own_methods.source(plan, name)}: method {name}.per_dataset"
            DATASETS.check(dataset, where, ConfigError)
            check_per_dataset(plan, method, own, f"{where}.{dataset}")
    for key, exp in plan.experiments.items():
        where = f"{plan.sources[key]}: experiment {key}"
        _check_paper(plan, exp.get("paper"), f"{where}.paper")
        if plan.is_analysis(key):
            unknown = set(exp) - ANALYSIS_KEYS
            if unknown or exp.get("analysis") not in ANALYSES:
                raise ConfigError(
                    f"{where}: an analysis takes keys {sorted(ANALYSIS_KEYS)} and `analysis` one of {ANALYSES.names()}"
                )
            for method in list(exp.get("methods") or []) + list(exp.get("loss_overrides") or {}):
                plan.method_of(method, where)
            for method, override in (exp.get("loss_overrides") or {}).items():
                declared.check(
                    "loss", deep_merge(plan.methods[method]["loss"], override), f"{where}.loss_overrides.{method}"
                )
            continue
        if plan.is_knobs(key):
            check_knob_experiment(plan, key, exp, where)
            continue
        unknown = set(exp) - EXPERIMENT_KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
        _check_seeds(exp.get("seeds"), where)
        for dataset in exp["datasets"]:
            DATASETS.check(dataset, where, ConfigError)
        for method in exp["methods"]:
            plan.method_of(method, where)
        check_settings(plan, exp.get("train"), f"{where}.train")
        for dataset, update in (exp.get("per_dataset") or {}).items():
            check_settings(plan, update, f"{where}.per_dataset.{dataset}")
        table = exp.get("table") or {}
        if not set(table) <= {"metrics", "test_selected"}:
            raise ConfigError(f"{where}.table: keys must be among ['metrics', 'test_selected'], not {sorted(table)}")
        unselectable = [
            m
            for m in table.get("test_selected") or []
            if not m.startswith("recall@") or m not in (table.get("metrics") or [])
        ]
        if unselectable:
            raise ConfigError(
                f"{where}.table.test_selected: {unselectable}: only the table's recall@K "
                f"(the epoch is chosen by recall@1, and only recall@K is measured every epoch)"
            )
        for name in exp.get("figures") or []:
            FIGURES.check(name, f"{where}.figures", ConfigError)
        table_checks.check_reported(exp, where)
        claim_checks.check_experiment(exp, where)
        margins.check_experiment(exp, where)
        table_checks.check_layout(exp, where)
        table_checks.check_title(plan, exp, where)
        ranked = "trunk_ranking" in (exp.get("figures") or [])
        if exp.get("kind") == "fair":
            check_fair(plan, key, where)
        elif {"fair", "necessities", "omitted"} & set(exp) or exp.get("kind") is not None:
            raise ConfigError(
                f"{where}: `kind` is analysis, fair or knobs, and only a fair experiment has `fair`, "
                f"`necessities` and `omitted`"
            )
        elif ranked or "paper_numbers" in exp:
            if not (ranked and exp.get("sweep")):
                raise ConfigError(
                    f"{where}: `paper_numbers` belong to a fair experiment or to one whose "
                    f"figures include trunk_ranking, with a sweep over trunks; and such a "
                    f"figure needs both"
                )
            from dmlbench.config import fair_catalogue

            fair_catalogue.check_paper_numbers(plan, key, where)
            fair_catalogue.check_fair_methods(plan, key, where)
        for label, entry in (exp.get("sweep") or {}).items():
            if not set(entry) <= SWEEP_KEYS:
                raise ConfigError(f"{where}.sweep.{label}: keys must be among {sorted(SWEEP_KEYS)}")
            check_settings(plan, entry.get("train"), f"{where}.sweep.{label}.train")
            without = [m for m in exp["methods"] if entry.get("miner") and not plan.methods[m].get("miner")]
            if without:
                raise ConfigError(f"{where}.sweep.{label}: sets miner options but method {without[0]} has no miner")
            for part in ("loss", "miner"):
                for method in exp["methods"] if entry.get(part) else []:
                    declared.check(
                        part,
                        deep_merge(plan.methods[method][part], entry[part]),
                        f"{where}.sweep.{label}.{part} (method {method})",
                    )
    claims.check_ids(plan.experiments, lambda key: plan.sources[key])
    for key, exp in plan.experiments.items():  # after the claims' checks: `claim_seeds` names their ids
        claim_seeds.check(exp, f"{plan.sources[key]}: experiment {key}", MAX_SEED)


def check_fair_settings(given: dict, where: str, complete: bool) -> None:
    """folds, trials, parallel, repetitions: integers at least their least value."""
    from dmlbench.config.fair_specs import FAIR_KEYS

    unknown = set(given) - set(FAIR_KEYS)
    missing = set(FAIR_KEYS) - set(given) if complete else set()
    if unknown or missing:
        raise ConfigError(
            f"{where}: keys are {sorted(FAIR_KEYS)}; "
            + "; ".join(
                f"{what} {sorted(names)}" for what, names in (("unknown", unknown), ("missing", missing)) if names
            )
        )
    for key, value in given.items():
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
    search_checks.check_protocol(plan, key)  # nor a search of the protocol's settings
    fair_catalogue.check_paper_numbers(plan, key, where)
    fair_catalogue.check_omitted(plan, key, where)


def check_per_dataset(plan, method: dict, own, where: str) -> None:
    """A method's settings on one dataset: `train` (training settings) and `loss` (its loss's
    parameters, checked by value as the method's own)."""
    if not isinstance(own, dict) or set(own) - {"train", "loss"}:
        raise ConfigError(
            f"{where}: takes `train` (training settings) and `loss` (the loss's parameters), "
            f"found {sorted(own) if isinstance(own, dict) else own!r}"
        )
    check_settings(plan, own.get("train"), f"{where}.train")
    if own.get("loss"):
        name = method["loss"]["name"]
        declared.check_params("loss", name, list(own["loss"]), f"{where}.loss")
        declared.check_values(declared.components("loss")[name], own["loss"], f"{where}.loss", "loss")


def check_settings(plan, update: dict | None, where: str) -> None:
    """Names of `update` are settings of dmlbench.run_config, and its values have their type and range."""
    check_keys(update, plan.defaults, where)
    values.check(update, plan.settings_schema, where)


def check_preset(plan) -> None:
    chosen = plan.preset["experiments"]
    if chosen != "all":
        for key in chosen:
            if key not in plan.experiments:
                raise ConfigError(
                    f"preset {plan.name}: unknown experiment id {key!r}"
                    f"{did_you_mean(key, plan.experiments)}; "
                    f"known: {', '.join(sorted(plan.experiments))}"
                )
    check_settings(plan, plan.preset["overrides"], f"preset {plan.name}.overrides")
    trunk_digests.check_recorded(plan)
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
        if "knobs" in subset and not plan.is_knobs(key):
            raise ConfigError(f"{where}.knobs: {key} is not a knob experiment")
        if plan.is_knobs(key):
            from dmlbench.config import knob_recipes

            knobs = knob_recipes.catalogue(plan)
            methods, knob_names = list(knobs.headline.values()), [k.name for k in knobs.knobs]
        else:
            methods, knob_names = exp["methods"], []
        for field, known in (
            ("datasets", exp["datasets"]),
            ("methods", methods),
            ("variants", list(exp.get("sweep") or {})),
            ("knobs", knob_names),
        ):
            unknown = set(subset.get(field) or []) - set(known)
            if unknown:
                raise ConfigError(f"{where}.{field}: {sorted(unknown)} not in the experiment's {field} {known}")
        check_settings(plan, subset.get("train"), f"{where}.train")
        if "fair" in subset:
            if not plan.is_fair(key):
                raise ConfigError(f"{where}.fair: {key} is not a fair experiment")
            check_fair_settings(subset["fair"], f"{where}.fair", complete=False)


def check_knob_experiment(plan, key: str, exp: dict, where: str) -> None:
    """A knob experiment (`kind: knobs`): its keys, datasets, seeds and stand-ins."""
    unknown = set(exp) - KNOB_KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown keys {sorted(unknown)}; a knob experiment takes {sorted(KNOB_KEYS)} "
            f"(its methods and knobs are workflow/config/knobs.yaml's)"
        )
    _check_seeds(exp.get("seeds"), where)
    for dataset in exp["datasets"]:
        DATASETS.check(dataset, where, ConfigError)
    for dataset, source in (exp.get("stand_in") or {}).items():
        if dataset not in exp["datasets"] or source not in DATASETS.names():
            raise ConfigError(
                f"{where}.stand_in.{dataset}: {source!r}: a dataset of the experiment takes the "
                f"recipe of another dataset (dataset: one of {exp['datasets']}; "
                "recipe's: a dataset name)"
            )


def _check_seeds(seeds, where: str) -> None:
    if seeds is not None and not (
        isinstance(seeds, list) and seeds and all(type(s) is int and 0 <= s <= MAX_SEED for s in seeds)
    ):
        raise ConfigError(f"{where}.seeds: a list of whole numbers from 0 to {MAX_SEED}, not {seeds!r}")
    if seeds is not None and len(set(seeds)) != len(seeds):  # a seed twice: one run counted twice
        raise ConfigError(f"{where}.seeds: {sorted({s for s in seeds if seeds.count(s) > 1})} given twice in {seeds}")
