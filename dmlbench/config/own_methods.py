"""A user's own methods beside the catalogue's, without editing it: `--config methods_file=PATH`,
a YAML file of

    methods:                  # entries as in methods.yaml; a loss, miner or sampler may be named
      my_margin:              # `module:Class` (a module on the path) or by an installed package's
        label: My margin      # entry point (`dmlbench.losses`, …)
        loss: {name: "my_dml.losses:MyMargin", margin: 0.2}
        search: {loss.margin: {low: 0, high: 1}}    # for the fair table's search
    join: [suite.fair]        # experiments each method joins, beside the papers' methods

A method joining a fair experiment gets `paper_numbers: {none: …}` (no paper prints it); one
joining an experiment the preset narrows to some methods joins that choice too. A name the
catalogue already has, an unknown experiment or a malformed file is refused naming the file."""

from __future__ import annotations

from pathlib import Path

from dmlbench.config.loading import load_yaml, plain_numbers
from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean

KEYS = {"methods", "join"}


def source(plan, name: str) -> Path:
    """The file that defines method `name`: the user's methods file or the catalogue's."""
    return plan.method_files.get(name, plan.config_dir / "methods.yaml")


def merge(plan) -> None:
    """Add the preset's `methods_file` (if any) to `plan.methods` and the experiments it joins;
    `plan.method_files` records which method came from it."""
    plan.method_files = {}
    given = plan.preset.get("methods_file")
    if not given:
        return
    path = Path(given).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"methods_file={given}: no such file ({path.absolute()}: a relative path is read from the "
            f"workflow's folder, snakemake's -d); give the path of a YAML file of your methods "
            f"(docs/howto/compare-your-method.md)"
        )
    own = load_yaml(path)
    if not isinstance(own, dict) or not isinstance(own.get("methods"), dict) or set(own) - KEYS:
        raise ConfigError(
            f"{path}: a methods file holds `methods:` (entries as in methods.yaml) and `join:` "
            f"(experiment ids); found {sorted(own) if isinstance(own, dict) else type(own).__name__}"
        )
    for name, entry in own["methods"].items():
        if name in plan.methods:
            raise ConfigError(f"{path}: method {name!r} is a name the catalogue has already; choose another")
        plan.methods[name] = plain_numbers(entry)
        plan.method_files[name] = path
    joined = own.get("join") or []
    if not isinstance(joined, list):
        raise ConfigError(f"{path}: join: a list of experiment ids, e.g. [suite.fair]")
    for experiment in joined:
        if experiment not in plan.experiments:
            raise ConfigError(
                f"{path}: join: unknown experiment {experiment!r}{did_you_mean(experiment, plan.experiments)}"
            )
        exp = plan.experiments[experiment]
        if not isinstance(exp.get("methods"), list):
            kind = f", kind: {exp['kind']}" if exp.get("kind") else ""
            raise ConfigError(
                f"{path}: join: {experiment} ({plan.sources[experiment].name}{kind}) has no `methods:` to "
                f"join; join an experiment that lists its methods, such as suite.fair"
            )
        exp["methods"] = [*exp["methods"], *own["methods"]]
        if exp.get("kind") == "fair":
            exp.setdefault("paper_numbers", {}).update(
                {name: {"none": f"the user's own method ({path.name})"} for name in own["methods"]}
            )
        chosen = ((plan.preset.get("subset") or {}).get(experiment) or {}).get("methods")
        if chosen is not None:
            chosen.extend(name for name in own["methods"] if name not in chosen)
