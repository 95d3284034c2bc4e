"""The losses, miners and samplers the config may name, and the keyword parameters each one's
constructor takes, read from the source without importing it (the plan validates every method
before any job, and the plan does not import torch).

A component is what a module of its family registers with `@LOSSES.register("name")` (`MINERS`,
`SAMPLERS`); its parameters are its `__init__`'s, with a base class's added where `__init__`
passes `**kwargs` on (or has none); a loss's `takes_miner`, `restricts_pairs` and `needs` are its
class attributes (or a base's), `class_vectors` whether it defines that method. `tests/test_declared.py` checks the reading against Python's
own `inspect.signature` of every registered component.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dmlbench.errors import ConfigError
from dmlbench.registry import did_you_mean

METHODS = Path(__file__).resolve().parent
FAMILIES = {"loss": ("LOSSES", "losses"), "miner": ("MINERS", "miners"), "sampler": ("SAMPLERS", "samplers.py")}


@dataclass(frozen=True)
class Component:
    name: str
    source: str                 # file:line of its class, relative to the package
    params: tuple[str, ...]     # keyword parameters, in order
    required: tuple[str, ...]   # those without a default
    open: bool                  # takes any keyword (**kwargs passed nowhere we can read)
    takes_miner: bool = False   # a loss that sees the pairs a miner keeps
    restricts_pairs: bool = False  # its forward takes `pairs=` (the PROFS scheme's restriction)
    needs: tuple = ()           # constructor arguments the training fills in
    class_vectors: bool = False  # has class centres to rank (`class_vectors()`)
    defaults: tuple = ()        # each parameter's default as written in the source (None: required)
    doc: str = ""               # the class's docstring: equation, parameters, paper
    types: tuple = ()           # each parameter's annotation as written (None: not annotated)
    limits: tuple = ()          # (parameter, limit) pairs: "> 0", "[-1, 1]", or the values allowed


def _files(family: str) -> list[Path]:
    where = METHODS / FAMILIES[family][1]
    return sorted(where.glob("*.py")) if where.is_dir() else [where]


def _registered_name(node: ast.ClassDef | ast.FunctionDef, registry: str) -> str | None:
    for decorator in node.decorator_list:
        if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "register" and isinstance(decorator.func.value, ast.Name)
                and decorator.func.value.id == registry and decorator.args
                and isinstance(decorator.args[0], ast.Constant)):
            return decorator.args[0].value
    return None


def _defaults(function: ast.FunctionDef, skip: int) -> list[tuple[str, str | None]]:
    """(name, default as written or None) of each parameter, the first `skip` left out."""
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults))[skip:] + list(zip(args.kwonlyargs, args.kw_defaults))
    return [(a.arg, None if d is None else ast.unparse(d)) for a, d in pairs]


def _arguments(function: ast.FunctionDef, skip: int) -> tuple[list[str], list[str], bool]:
    """(parameter names, those without a default, whether it takes **kwargs), the first `skip` left out."""
    params = _defaults(function, skip)
    return [p for p, _ in params], [p for p, d in params if d is None], function.args.kwarg is not None


def _annotations(function: ast.FunctionDef, skip: int) -> list[tuple[str, str | None]]:
    """(name, annotation as written or None) of each parameter, the first `skip` left out."""
    args = function.args
    every = (args.posonlyargs + args.args)[skip:] + args.kwonlyargs
    return [(a.arg, None if a.annotation is None else ast.unparse(a.annotation)) for a in every]


def _default_texts(node, classes: dict[str, ast.ClassDef], read=_defaults) -> dict[str, str | None]:
    """Parameter → its default (or with `read=_annotations` its annotation) as written, over
    `node`'s constructor and the bases it passes on to."""
    if isinstance(node, ast.FunctionDef):
        return dict(read(node, 0))
    init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    base = next((classes[b.id] for b in node.bases if isinstance(b, ast.Name) and b.id in classes), None)
    inherited = _default_texts(base, classes, read) if base is not None else {}
    if init is None:
        return inherited
    own = dict(read(init, 1))
    return own | {k: v for k, v in inherited.items() if k not in own} if init.args.kwarg else own


def _signature(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> tuple[list[str], list[str], bool]:
    """(parameters, required ones, open) of `cls`'s constructor, following its bases in `classes`."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    base = next((classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes), None)
    inherited = _signature(base, classes) if base is not None else ([], [], False)
    if init is None:
        return inherited
    names, required, passes_on = _arguments(init, skip=1)  # without self
    if not passes_on:
        return names, required, False
    if base is None:
        return names, required, True
    return (names + [p for p in inherited[0] if p not in names],
            required + [p for p in inherited[1] if p not in names], inherited[2])


def _class_attribute(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], name: str, default,
                     constants: dict | None = None):
    """The literal class attribute `name` of `cls` or of its nearest base in `classes`; a name in
    it is looked up among the class's own literal attributes, then `constants` (the literal
    module constants of the methods' files)."""
    for node in cls.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return _literal(node.value, {**(constants or {}), **_constants([cls])})
    base = next((classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes), None)
    return _class_attribute(base, classes, name, default, constants) if base is not None else default


def _limits(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], constants: dict) -> dict:
    """The class's `limits` over those of its bases (its own win)."""
    base = next((classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes), None)
    inherited = _limits(base, classes, constants) if base is not None else {}
    own = next((node for node in cls.body if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "limits" for t in node.targets)), None)
    return inherited | (_literal(own.value, {**constants, **_constants([cls])}) if own is not None else {})


def _literal(node: ast.AST, constants: dict):
    """`ast.literal_eval` of `node`, each bare name replaced by its constant's value."""
    class Named(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name):
            if name.id not in constants:
                raise ValueError(f"{name.id} is not a literal constant of the methods' files")
            return ast.copy_location(ast.Constant(constants[name.id]), name)
    return ast.literal_eval(Named().visit(ast.parse(ast.unparse(node), mode="eval")))


def _constants(trees) -> dict:
    """`NAME = <literal>` assignments in the bodies of `trees` (modules or classes)."""
    found, twice = {}, set()
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    continue
                name = node.targets[0].id
                if name in found and found[name] != value:
                    twice.add(name)  # two files, two values: not to be guessed
                found[name] = value
    return {name: value for name, value in found.items() if name not in twice}


def _defines(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], method: str) -> bool:
    if any(isinstance(f, ast.FunctionDef) and f.name == method for f in cls.body):
        return True
    base = next((classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes), None)
    return base is not None and _defines(base, classes, method)


@cache
def components(family: str) -> dict[str, Component]:
    """Name → `Component` of `family` (loss, miner, sampler), from the source."""
    registry = FAMILIES[family][0]
    trees = {path: ast.parse(path.read_text(), str(path)) for path in _files(family)}
    trees[METHODS / "losses" / "base.py"] = ast.parse((METHODS / "losses" / "base.py").read_text())
    classes = {node.name: node for tree in trees.values() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)}
    constants = _constants(trees.values())
    found = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                continue
            name = _registered_name(node, registry)
            if name is None:
                continue
            params, required, open_ = (_signature(node, classes) if isinstance(node, ast.ClassDef)
                                       else _arguments(node, skip=0))
            texts = _default_texts(node, classes)
            annotations = _default_texts(node, classes, _annotations)
            is_class = isinstance(node, ast.ClassDef)
            limits = _limits(node, classes, constants) if is_class else {}
            found[name] = Component(
                name, f"{path.relative_to(METHODS.parent)}:{node.lineno}", tuple(params), tuple(required), open_,
                is_class and _class_attribute(node, classes, "takes_miner", False),
                is_class and _class_attribute(node, classes, "restricts_pairs", False),
                tuple(_class_attribute(node, classes, "needs", ())) if is_class else (),
                is_class and _defines(node, classes, "class_vectors"),
                tuple(texts.get(p) for p in params), ast.get_docstring(node) or "",
                tuple(annotations.get(p) for p in params), tuple((p, limits[p]) for p in params if p in limits))
    return found


def check(family: str, entry, where: str) -> None:
    """`entry` of the config (`{name: …, <parameter>: …}` for a loss or miner, a name for a
    sampler): a registered name and keyword parameters its constructor takes, every one without a
    default given (except those the training fills in: `needs`); else ConfigError naming `where`, the key and
    the closest known name."""
    known = components(family)
    name = entry.get("name") if isinstance(entry, dict) else entry
    if name not in known:
        raise ConfigError(f"{where}: unknown {family} {name!r}{did_you_mean(name, known)}; "
                          f"known: {', '.join(sorted(known))}")
    if not isinstance(entry, dict):
        return
    check_params(family, name, [k for k in entry if k != "name"], where)
    check_values(known[name], {k: v for k, v in entry.items() if k != "name"}, f"{where}", family)
    missing = [p for p in known[name].required if p not in entry and p not in known[name].needs]
    if missing:
        raise ConfigError(f"{where}: {family} {name!r} needs {', '.join(missing)} "
                          f"({known[name].source})")


def check_method(method: dict, where: str) -> None:
    """A method's loss, miner and sampler (`check`), and no miner given to a loss that takes none."""
    for part in ("loss", "miner", "sampler"):
        if method.get(part) is not None:
            check(part, method[part], f"{where}.{part}")
    loss = components("loss")[method["loss"]["name"]]
    if method.get("miner") is not None and not loss.takes_miner:
        raise ConfigError(f"{where}.miner: loss {loss.name!r} takes no miner (it builds its own comparisons: "
                          f"{loss.source}); remove the miner or choose a loss that uses one")


def check_params(family: str, name: str, keys, where: str) -> None:
    """Each of `keys` is a keyword parameter of `family` component `name`."""
    component = components(family)[name]
    for key in keys:
        if not component.open and key not in component.params:
            raise ConfigError(f"{where}.{key}: {family} {name!r} has no parameter {key!r}"
                              f"{did_you_mean(key, component.params)}; it takes: "
                              f"{', '.join(component.params) or 'none'} ({component.source})")


def check_values(component: Component, values: dict, where: str, family: str) -> None:
    """Each value of the type its constructor's annotation says (a float: a finite number) and
    within the component's `limits`; else ConfigError naming the key, the value and what it takes."""
    types, limits = dict(zip(component.params, component.types)), dict(component.limits)
    for key, value in values.items():
        kind, limit = types.get(key), limits.get(key)
        told = f"{family} {component.name!r} takes {key}: {kind}{f', {shown_limit(limit)}' if limit else ''} ({component.source})"
        if kind and not _of_type(value, kind):
            raise ConfigError(f"{where}.{key}: {value!r} is not of that kind; {told}")
        if limit is not None and value is not None and not _within(value, limit):
            raise ConfigError(f"{where}.{key}: {value!r} is outside what it allows; {told}")


def _of_type(value, annotation: str) -> bool:
    kinds = {part.strip() for part in annotation.split("|")}
    if value is None:
        return "None" in kinds
    if isinstance(value, bool):
        return "bool" in kinds
    if isinstance(value, int):
        return bool(kinds & {"int", "float"})
    if isinstance(value, float):
        return "float" in kinds and math.isfinite(value)
    if isinstance(value, str):
        return "str" in kinds
    return not kinds & {"int", "float", "bool", "str", "None"}  # another annotation: not checked here


def _within(value, limit) -> bool:
    """`limit`: "> a", ">= a", "< a", "<= a", an interval "[a, b]" (brackets: ends included,
    parentheses: not), or a tuple of the values allowed."""
    if isinstance(limit, (tuple, list)):
        return value in limit
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    text = limit.replace(" ", "")
    for sign, test in ((">=", float.__ge__), ("<=", float.__le__), (">", float.__gt__), ("<", float.__lt__)):
        if text.startswith(sign):
            return test(float(value), float(text[len(sign):]))
    low, high = (float(end) for end in text[1:-1].split(","))
    return ((low <= value) if text[0] == "[" else (low < value)) and ((value <= high) if text[-1] == "]" else (value < high))


def shown_limit(limit) -> str:
    return f"one of {', '.join(map(repr, limit))}" if isinstance(limit, (tuple, list)) else str(limit)
