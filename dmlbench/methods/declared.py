"""The losses, miners and samplers the config may name, and the keyword parameters each one's
constructor takes, read from the source without importing it (the plan validates every method
before any job, and the plan does not import torch).

A component is what a module of its family registers with `@LOSSES.register("name")` (`MINERS`,
`SAMPLERS`); its parameters are its `__init__`'s, with a base class's added where `__init__`
passes `**kwargs` on (or has none); a loss's `takes_miner`, `restricts_pairs` and `needs` are its
class attributes (or a base's), `class_vectors` whether it defines that method. `tests/test_declared.py`
checks the reading against Python's own `inspect.signature` of every registered component.

The same reading covers a user's own components, without importing them: an installed package's
entry points (`dmlbench.losses`, `dmlbench.miners`, `dmlbench.samplers`: name = "module:Class")
and a name written `module:Class` in a methods file; the module's source is found on the path
(`importlib.util.find_spec`) and its class read as the package's are, its bases among its own
classes and the package's (`PairLoss`, …). This is the registry the plan validates against: the
one the training builds from (`dmlbench.core.registry.Registry`) knows the same names.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from dmlbench.core.errors import ConfigError
from dmlbench.methods import limits as declared_limits
from dmlbench.methods.limits import shown as shown_limit  # what a limit allows, in words (the checks' messages)
from dmlbench.methods import plugin_source, pml, pml_cache, source_reading
from dmlbench.core.registry import did_you_mean, entry_points, importable

METHODS = Path(__file__).resolve().parent
FAMILIES = {"loss": ("LOSSES", "losses"), "miner": ("MINERS", "miners"), "sampler": ("SAMPLERS", "samplers")}
GROUPS = {"loss": "dmlbench.losses", "miner": "dmlbench.miners", "sampler": "dmlbench.samplers"}


@dataclass(frozen=True)
class Component:
    name: str
    source: str  # file:line of its class, relative to the package
    params: tuple[str, ...]  # keyword parameters, in order
    required: tuple[str, ...]  # those without a default
    open: bool  # takes any keyword (**kwargs passed nowhere we can read)
    takes_miner: bool = False  # a loss that sees the pairs a miner keeps
    restricts_pairs: bool = False  # its forward takes `pairs=` (the PROFS scheme's restriction)
    needs: tuple = ()  # constructor arguments the training fills in
    class_vectors: bool = False  # has class centres to rank (`class_vectors()`)
    defaults: tuple = ()  # each parameter's default as written in the source (None: required)
    doc: str = ""  # the class's docstring: equation, parameters, paper
    types: tuple = ()  # each parameter's annotation as written (None: not annotated)
    limits: tuple = ()  # (parameter, limit) pairs: "> 0", "[-1, 1]", or the values allowed
    about: tuple = ()  # (parameter, "meaning; source") pairs: the class's `about`
    code: tuple = ()  # a user's component: (module, sha256 of its file) of the files it is made of


def _files(family: str) -> list[Path]:
    where = METHODS / FAMILIES[family][1]
    return sorted(where.glob("*.py")) if where.is_dir() else [where]


@cache
def _package(family: str) -> tuple[dict, dict, dict]:
    """The family's source files as trees, their classes by name (with the losses' base) and
    their literal constants."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in _files(family)}
    trees[METHODS / "losses" / "base.py"] = ast.parse((METHODS / "losses" / "base.py").read_text())
    classes = source_reading.Flat(
        {node.name: node for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    )
    return trees, classes, source_reading.literal_constants(trees.values())


def _component(
    name: str, node, classes: dict, constants: dict, source: str, tree: ast.Module | None = None
) -> Component:
    params, required, open_ = (
        source_reading.constructor_signature(node, classes)
        if isinstance(node, ast.ClassDef)
        else source_reading.parameters(node, skip=0)
    )
    texts = source_reading.default_texts(node, classes)
    annotations = source_reading.default_texts(node, classes, source_reading.parameter_annotations)
    is_class = isinstance(node, ast.ClassDef)
    limits = _mapping(node, classes, constants, source, "limits") if is_class else {}
    declared_limits.check_declared(limits, params, open_, source)
    about = (
        _mapping(node, classes, constants, source, "about")
        if is_class
        else source_reading.function_mapping(tree, node.name, "about", constants)
        if tree
        else {}
    )
    return Component(
        name,
        source,
        tuple(params),
        tuple(required),
        open_,
        is_class and source_reading.class_attribute(node, classes, "takes_miner", False),
        is_class and source_reading.class_attribute(node, classes, "restricts_pairs", False),
        tuple(source_reading.class_attribute(node, classes, "needs", ())) if is_class else (),
        is_class and source_reading.defines(node, classes, "class_vectors"),
        tuple(texts.get(p) for p in params),
        ast.get_docstring(node) or "",
        tuple(annotations.get(p) for p in params),
        tuple((p, limits[p]) for p in params if p in limits),
        tuple((p, about[p]) for p in params if p in about),
    )


def _mapping(node: ast.ClassDef, classes, constants: dict, source: str, name: str) -> dict:
    """The class's `limits` or `about`; ConfigError naming the class's file where it is no literal."""
    try:
        return source_reading.class_mapping(node, classes, constants, name)
    except ValueError as error:
        raise ConfigError(
            f"{source}: {node.name}.{name} is not a literal the plan can read without running the module "
            f"({error}); write a dict of strings, numbers and tuples, e.g. {name} = {{'margin': '[0, 1]'}}"
        ) from None


def external(family: str, target: str, name: str) -> Component:
    """The component `target` ("module:Class") of a user's module, read from its source, nothing
    imported (`plugin_source`); ConfigError naming it where the module cannot be found, the name is
    not a class it defines (a function, a class it imports: where it is defined) or the class is no
    dmlbench component (a subclass of the family's documented base)."""
    if family in pml.FAMILIES and pml.is_pml(target):  # pytorch-metric-learning's, by its own prefix
        return Component(**pml_cache.remembered("component", [target, family], lambda: pml.component(target, family)))
    module, _, attribute = target.partition(":")
    said = f"{family} {name!r}"
    own = plugin_source.checkout_own(module)
    if own is not None:
        raise ConfigError(
            f"{said}: {module.split('.')[0]!r} is the name of the dmlbench checkout's own {own}, first on every "
            f"job's path: a package of yours of that name would not be the one imported; rename your package"
        )
    trees, _, constants = _package(family)
    lineage = plugin_source.Lineage(trees)
    try:
        found = lineage.module(module)
    except ModuleNotFoundError as error:
        raise ConfigError(
            f"{said}: module {module!r} cannot be found ({error}); install the package or put its folder on PYTHONPATH"
        ) from None
    if found is None:
        raise ConfigError(
            f"{said}: {module!r} is no Python source file on the path; install the package or put its folder on "
            f"PYTHONPATH"
        )
    path, tree = found.path, found.tree
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == attribute), None)
    if node is None:
        raise ConfigError(f"{said}: {plugin_source.not_a_class(lineage, found, attribute, family)}")
    if not lineage.is_component(node, family):
        raise ConfigError(
            f"{said}: class {attribute} ({path}:{node.lineno}) is no dmlbench {family}: a {family} subclasses "
            f"{plugin_source.bases_text(family)} (docs/howto/compare-your-method.md)"
        )
    component = _component(
        name, node, lineage, {**constants, **source_reading.literal_constants([tree])}, f"{path}:{node.lineno}", tree
    )
    return replace(component, code=tuple(lineage.code(node).items()))


class Known(dict):
    """Name → `Component`; a `module:Class` name is read from its source when first asked for."""

    def __init__(self, family: str, found: dict):
        super().__init__(found)
        self.family = family

    def __missing__(self, name):
        if not (importable(name) or (self.family in pml.FAMILIES and pml.is_pml(name))):
            raise KeyError(name)
        self[name] = external(self.family, name, name)
        return self[name]

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or importable(name) or (self.family in pml.FAMILIES and pml.is_pml(name))


@cache
def components(family: str) -> Known:
    """Name → `Component` of `family` (loss, miner, sampler), from the source: the package's
    registered components and the installed packages' entry points; `module:Class` names on demand."""
    registry = FAMILIES[family][0]
    trees, classes, constants = _package(family)
    found = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                continue
            name = source_reading.registered_name(node, registry)
            if name is not None:
                found[name] = _component(
                    name, node, classes, constants, f"{path.relative_to(METHODS.parent)}:{node.lineno}", tree
                )
    for point in entry_points(GROUPS[family]):
        if point.name in found:
            raise ConfigError(
                f"{family} {point.name!r} of the installed package "
                f"{point.dist.name if point.dist else '?'} "
                f"(entry point {GROUPS[family]}) is a built-in name too; rename it there"
            )
        found[point.name] = external(family, point.value, point.name)
    return Known(family, found)


def check(family: str, entry, where: str) -> None:
    """`entry` of the config (`{name: …, <parameter>: …}` for a loss or miner, a name for a
    sampler): a registered name and keyword parameters its constructor takes, every one without a
    default given (except those the training fills in: `needs`); else ConfigError naming `where`, the key and
    the closest known name."""
    known = components(family)
    name = entry.get("name") if isinstance(entry, dict) else entry
    if isinstance(name, str) and name.count(":") == 1 and not dict.__contains__(known, name):
        try:  # read from source, nothing imported; else says why (not on the path, no component)
            known[name] = external(family, name, name)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from None
    if name not in known:
        raise ConfigError(
            f"{where}: unknown {family} {name!r}{did_you_mean(name, known)}; known: "
            f"{', '.join(sorted(known))} (a plugin's name: its package's entry point "
            f"{GROUPS[family]} was not found; install the package, or put its folder, with its "
            f".dist-info, on PYTHONPATH)"
        )
    if not isinstance(entry, dict):
        return
    check_params(family, name, [k for k in entry if k != "name"], where)
    check_values(known[name], {k: v for k, v in entry.items() if k != "name"}, f"{where}", family)
    missing = [p for p in known[name].required if p not in entry and p not in known[name].needs]
    if missing:
        raise ConfigError(f"{where}: {family} {name!r} needs {', '.join(missing)} ({known[name].source})")
    if pml.is_pml(name):  # what PML itself refuses, before any job (imports torch and PML where not kept)
        needs = known[name].needs
        pml_cache.remembered("build", [entry, needs, family], lambda: _build(entry, where, needs, family))


def _build(entry: dict, where: str, needs: tuple, family: str) -> None:
    from dmlbench.methods import pml_loss  # torch and PML: only for a pml: name

    pml_loss.check_build(entry, where, needs, family)


def check_method(method: dict, where: str) -> None:
    """A method's loss, miner and sampler (`check`), and no miner given to a loss that takes none."""
    for part in ("loss", "miner", "sampler"):
        if method.get(part) is not None:
            check(part, method[part], f"{where}.{part}")
    loss = components("loss")[method["loss"]["name"]]
    if method.get("miner") is not None and not loss.takes_miner:
        raise ConfigError(
            f"{where}.miner: loss {loss.name!r} takes no miner (it builds its own comparisons: "
            f"{loss.source}); remove the miner or choose a loss that uses one"
        )


def check_params(family: str, name: str, keys, where: str) -> None:
    """Each of `keys` is a keyword parameter of `family` component `name`."""
    component = components(family)[name]
    for key in keys:
        if not component.open and key not in component.params:
            raise ConfigError(
                f"{where}.{key}: {family} {name!r} has no parameter {key!r}"
                f"{did_you_mean(key, component.params)}; it takes: "
                f"{', '.join(component.params) or 'none'} ({component.source})"
            )


def check_values(component: Component, values: dict, where: str, family: str) -> None:
    """Each value of the type its constructor's annotation says (a float: a finite number) and
    within the component's `limits`; else ConfigError naming the key, the value and what it takes."""
    types, limits = dict(zip(component.params, component.types)), dict(component.limits)
    for key, value in values.items():
        kind, limit = types.get(key), limits.get(key)
        told = (
            f"{family} {component.name!r} takes {key}: {kind}{f', {shown_limit(limit)}' if limit else ''} "
            f"({component.source})"
        )
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{where}.{key}: {value!r} is not a finite number; {told}")
        if kind and not declared_limits.of_type(value, kind):
            raise ConfigError(f"{where}.{key}: {value!r} is not {declared_limits.type_name(kind)}; {told}")
        if limit is not None and value is not None and not declared_limits.within(value, limit):
            raise ConfigError(f"{where}.{key}: {value!r} is outside what it allows; {told}")
