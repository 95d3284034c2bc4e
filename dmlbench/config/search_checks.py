"""Every value a method's fair search can ask (`search:`, `dmlbench.fair.space`), checked when the
plan loads, so that no search job dies on a value the plan let through (and again on every rerun,
the trial being in the journal):

- a loss or miner parameter against its constructor's annotation and `limits`
  (`dmlbench.methods.declared`): an `int` parameter is searched with `int: true`, a parameter that
  is no number is not searched, each end of the range (every value, for a list of allowed values)
  lies within its limits; a tied path (`same_as`) against its own parameter, over its source's range;
- a training setting against its type in the settings' schema (`integer`: `int: true`), then each
  value the search can ask (the ends of a real range, every value of an integer one) applied to the
  method's fold training and checked as a run is, by value and with the settings it meets
  (`batch.size` a multiple of `batch.per_class`, …), the other dimensions at the paper's setting;
- in a fair experiment, no setting the protocol holds equal for every method: a training setting is
  searched only where it is the method's necessity, or the loss parameters' rate (`SEARCHED`).
"""

from __future__ import annotations

from dmlbench.config import own_methods
from dmlbench.core.errors import ConfigError
from dmlbench.fair import space as spaces
from dmlbench.methods import declared

SEARCHED = ("optimizer.loss_lr_mult",)  # training settings any method may search: its loss parameters' rate
MAX_VALUES = 1000  # an integer training setting's values, each checked as a run when the plan loads
OWN = ("loss", "miner")


def _where(plan, name: str) -> str:
    return f"{own_methods.source(plan, name)}: method {name}"


def check_method(plan, name: str, method: dict) -> None:
    """The method's `search` (if any), parsed, and each loss and miner path against its parameter."""
    if not method.get("search"):
        return
    where = _where(plan, name)
    for path in method["search"]:
        part, _, param = path.partition(".")
        if part in OWN and isinstance(method.get(part), dict):
            declared.check_params(part, method[part]["name"], [param], f"{where}.search: {part}")
    try:
        space = spaces.parse(name, method)
    except ConfigError as error:
        raise ConfigError(f"{own_methods.source(plan, name)}: {error}") from None
    ranges = {d.path: d for d in space.dimensions}
    for path, source in [(d.path, None) for d in space.dimensions] + list(space.tied.items()):
        part, _, param = path.partition(".")
        dimension = ranges[source or path]
        if part in OWN and isinstance(method.get(part), dict):
            component = declared.components(part)[method[part]["name"]]
            _check_parameter(component, part, param, dimension, f"{where}.search.{path}", source)
        elif part not in OWN:
            _check_setting(plan.settings_schema, path, dimension, f"{where}.search.{path}", source)


def _tied(source: str | None, dimension: spaces.Dimension) -> str:
    return f" (same_as {source}, which the search asks over [{dimension.low:g}, {dimension.high:g}])" if source else ""


def _kind(annotation: str | None) -> str | None:
    """'real', 'integer' or 'other' for a parameter's annotation (None: not annotated)."""
    if annotation is None:
        return None
    kinds = {part.strip() for part in annotation.split("|")}
    return "real" if "float" in kinds else "integer" if "int" in kinds else "other"


def _check_kind(kind: str | None, dimension, told: str, where: str, source) -> None:
    how = f"{where}{_tied(source, dimension)}"
    if kind == "other":
        raise ConfigError(f"{how}: {told}, not a number, and a search asks numbers; leave it out of `search`")
    if kind == "integer" and not dimension.integer:
        fix = f"give {source} `int: true`" if source else "add `int: true` to the range"
        raise ConfigError(
            f"{how}: {{low: {dimension.low:g}, high: {dimension.high:g}}} asks real values "
            f"(such as {(dimension.low + dimension.high) / 2:g}), but {told}; {fix}"
        )


def asked_values(dimension: spaces.Dimension) -> list:
    """The values of a dimension a check must see: the ends of a real range (a limit is an
    interval), every value of an integer one."""
    if not dimension.integer:
        return [dimension.low, dimension.high]
    return list(range(int(dimension.low), int(dimension.high) + 1))


def _check_parameter(component, part: str, param: str, dimension, where: str, source) -> None:
    """A loss or miner parameter against the values the dimension asks."""
    kind = _kind(dict(zip(component.params, component.types)).get(param))
    told = f"{part} {component.name!r} takes {param}: {dict(zip(component.params, component.types)).get(param)}"
    _check_kind(kind, dimension, f"{told} ({component.source})", where, source)
    limit = dict(component.limits).get(param)
    if isinstance(limit, (tuple, list)) and not dimension.integer:
        raise ConfigError(
            f"{where}{_tied(source, dimension)}: {told}, {declared.shown_limit(limit)} ({component.source}), "
            f"but a real range asks any value between its ends; leave it out of `search`"
        )
    values = asked_values(dimension) if isinstance(limit, (tuple, list)) else [dimension.low, dimension.high]
    for value in values:
        try:
            at = where.removesuffix(f".{param}")  # check_values names the parameter itself
            declared.check_values(component, {param: int(value) if dimension.integer else value}, at, part)
        except ConfigError as error:
            fix = f"narrow {source}'s range or untie them" if source else "narrow the range"
            raise ConfigError(f"{error}{_tied(source, dimension)}; the search can ask it: {fix}") from None


def _setting_schema(schema: dict, path: str) -> dict | None:
    node = schema
    for part in path.split("."):
        node = (node.get("properties") or {}).get(part) if isinstance(node, dict) else None
    return node


def _check_setting(schema: dict, path: str, dimension, where: str, source) -> None:
    """A training setting's type (its schema's) against the dimension; its values: `asked_runs`."""
    leaf = _setting_schema(schema, path)
    if leaf is None:
        return  # no such setting: named by `spaces.check` with the run
    types = leaf.get("type") if isinstance(leaf.get("type"), list) else [leaf.get("type")]
    kind = "real" if "number" in types else "integer" if "integer" in types else "other"
    _check_kind(kind, dimension, f"{path} is {'a whole number' if kind == 'integer' else kind}", where, source)
    if dimension.integer and dimension.high - dimension.low >= MAX_VALUES:
        raise ConfigError(
            f"{where}{_tied(source, dimension)}: an integer range of a training setting is checked value by "
            f"value when the plan loads, at most {MAX_VALUES} values, not {dimension.high - dimension.low + 1:g}; "
            f"narrow the range"
        )


def asked_runs(space: spaces.Space, cfg: dict):
    """(path, value, settings) for each value the search can ask of a dimension that moves a
    training setting (itself or by `same_as`), the others at the paper's setting."""
    paper = spaces.paper_setting(space, cfg)
    for d in space.dimensions:
        moved = [d.path] + [p for p, source in space.tied.items() if source == d.path]
        if all(p.partition(".")[0] in OWN for p in moved):
            continue
        for value in asked_values(d):
            yield d.path, value, spaces.apply(cfg, space, {**paper, d.path: value})


def check_asked(plan, run, space: spaces.Space, cfg: dict, check) -> None:
    """Each of `asked_runs` through `check(settings, where)`, the run's checks; a refusal names the
    method's file, the path and the value, with what to do."""
    for path, value, asked in asked_runs(space, cfg):
        try:
            check(asked, f"{_where(plan, run.method)}.search.{path} asks {value!r} (fair run {run.path(plan.name)})")
        except ConfigError as error:
            raise ConfigError(f"{error}; narrow the range so that every value the search asks passes") from None


def check_protocol(plan, key: str) -> None:
    """No method of fair experiment `key` searches a setting the protocol holds equal for all:
    a training setting only where it is the method's necessity there, or in `SEARCHED`."""
    exp = plan.experiments[key]
    for method in exp["methods"]:
        allowed = list(((exp.get("necessities") or {}).get(method) or {})) + list(SEARCHED)
        for path in plan.methods[method].get("search") or {}:
            if path.partition(".")[0] in OWN or any(path == a or path.startswith(f"{a}.") for a in allowed):
                continue
            raise ConfigError(
                f"{_where(plan, method)}.search.{path}: {path} is a setting the fair protocol ({key}) "
                f"holds equal for every method, which a search would change for this method alone; "
                f"search the method's own parameters (loss.*, miner.*, {', '.join(SEARCHED)}) and "
                f"leave {path} out"
            )
