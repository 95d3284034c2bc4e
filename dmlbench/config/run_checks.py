"""Every resolved run of the plan checked by value before any job starts: each setting by type
and range, then the checks that involve several settings of a run (the scheme's needs, the trunk's
input, enough training classes for a batch, the fair protocol's epoch selection)."""

from __future__ import annotations

import json

from dmlbench.config import method_checks, search_checks
from dmlbench.core.errors import ConfigError
from dmlbench.data.datasets import DATASETS
from dmlbench.models import timm_trunks
from dmlbench.run_config import RunConfig, values


def check_runs(plan) -> None:
    """Every resolved run's settings, by value, before any job starts (runs whose settings, dataset
    and table are another's, differing in seed or held-out fold only, are checked once)."""
    seen = set()
    for run in plan.runs():
        cfg = plan.resolved(run)
        chosen = {k: cfg[k] for k in plan.defaults}
        test_selected = bool((plan.experiments[run.experiment].get("table") or {}).get("test_selected"))
        key = (run.dataset, test_selected, json.dumps(chosen, sort_keys=True, default=str))
        if key in seen:
            continue
        seen.add(key)
        where = f"run {run.path(plan.name)}"
        values.check(chosen, plan.settings_schema, where)
        typed = _check_typed(plan, cfg, run.dataset, where)
        if test_selected and not typed.eval.every:
            raise ConfigError(
                f"{where}: the table of {run.experiment} shows a test-selected "
                f"epoch, which needs eval.every ≥ 1 (now 0)"
            )


def check_fair_runs(plan) -> None:
    """One fold training per fair experiment × dataset × method and stage (the others differ in
    fold and seed only), by value, with the paper's setting inside the method's search range and
    every value the search can ask passing the same checks (`search_checks`)."""
    from dmlbench.fair import space as spaces

    seen = set()
    for run in plan.fair_runs():
        if (run.experiment, run.dataset, run.method, run.stage) in seen:
            continue
        seen.add((run.experiment, run.dataset, run.method, run.stage))
        cfg = plan.resolved(run)
        where = f"fair run {run.path(plan.name)}"
        typed = check_settings(plan, cfg, run.dataset, where)
        if not typed.early_stopping.patience:
            raise ConfigError(
                f"{where}: the fair protocol selects each fold's epoch on its validation fold: "
                f"set early_stopping.patience"
            )
        spaces.check(run.method, plan.fair_space(run.method), cfg, where, own=run.method in plan.method_files)
        if run.stage == "search":  # every value the search can ask, as a run (the final runs' are among them)
            search_checks.check_asked(
                plan,
                run,
                plan.fair_space(run.method),
                cfg,
                lambda asked, at: check_settings(plan, asked, run.dataset, at),
            )


def check_settings(plan, cfg: dict, dataset: str, where: str) -> RunConfig:
    """A resolved run's settings by value, then typed (`_check_typed`)."""
    values.check({k: cfg[k] for k in plan.defaults}, plan.settings_schema, where)
    return _check_typed(plan, cfg, dataset, where)


def _check_typed(plan, cfg: dict, dataset: str, where: str) -> RunConfig:
    """The typed run (`dmlbench.run_config`) of a resolved config whose values passed the schema,
    and the checks that involve several of its settings."""
    typed = RunConfig.from_dict(cfg, where)
    values.check_run(typed, where)
    timm_trunks.check_settings(typed, where)
    method_checks.check_scheme_needs(typed, where)
    check_classes(plan, typed, dataset, where)
    return typed


def check_classes(plan, cfg: RunConfig, dataset: str, where: str) -> None:
    """A batch of batch.size / per_class classes needs that many training classes: the real
    dataset's count, or on class-disjoint folds (the fair protocol, suite.knobs' fold runs) the
    fewest the other folds leave; a CSV dataset's own count under the fixture presets too (the
    fixtures are checked by the tests on their own sizes)."""
    spec = DATASETS.get(dataset)
    if (plan.toy_data and not spec.csv) or cfg.method.sampler != "m_per_class" or cfg.scheme.name != "plain":
        return
    needed = cfg.batch.size // cfg.batch.per_class
    available = spec.expected.classes["train"]
    fold = cfg.data.get("fold")
    if fold:  # trained on the other folds: the classes less its largest fold (np.array_split's sizes)
        available -= -(-available // int(fold["of"]))
    if needed > available:
        on = (
            f"its fold trainings keep {available} of {dataset}'s training classes"
            if fold
            else (f"{dataset}'s training split has {available}")
        )
        raise ConfigError(
            f"{where}: batch.size {cfg.batch.size} at batch.per_class {cfg.batch.per_class} needs {needed} "
            f"classes, but {on}: set a batch it can fill for this dataset, e.g. per_dataset: "
            f"{{{dataset}: {{batch: {{size: {available * cfg.batch.per_class}, per_class: {cfg.batch.per_class}}}}}}} "
            f"(in a preset or a --configfile), or give it more classes"
        )
