"""Reading a component's constructor from its source, without importing it (the plan imports no
torch): the name it is registered under, its keyword parameters with their defaults and
annotations (following the bases it passes `**kwargs` on to: `classes.base(cls)`, a `Flat`
mapping's or a `plugin_source.Lineage`'s), its literal class attributes and
`limits`, and the literal constants of its module. `dmlbench.methods.declared` builds its
components from these."""

from __future__ import annotations

import ast


class Flat(dict):
    """Class name → class of the package's own files, which name their bases by bare names (a
    user's files are read by `dmlbench.methods.plugin_source.Lineage`, which follows imports)."""

    def base(self, cls: ast.ClassDef) -> ast.ClassDef | None:
        """The first of `cls`'s bases among these classes."""
        return next((self[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in self), None)


def registered_name(node: ast.ClassDef | ast.FunctionDef, registry: str) -> str | None:
    for decorator in node.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "register"
            and isinstance(decorator.func.value, ast.Name)
            and decorator.func.value.id == registry
            and decorator.args
            and isinstance(decorator.args[0], ast.Constant)
        ):
            return decorator.args[0].value
    return None


def parameter_defaults(function: ast.FunctionDef, skip: int) -> list[tuple[str, str | None]]:
    """(name, default as written or None) of each parameter, the first `skip` left out."""
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults))[skip:] + list(zip(args.kwonlyargs, args.kw_defaults))
    return [(a.arg, None if d is None else ast.unparse(d)) for a, d in pairs]


def parameters(function: ast.FunctionDef, skip: int) -> tuple[list[str], list[str], bool]:
    """(parameter names, those without a default, whether it takes **kwargs), the first `skip` left out."""
    params = parameter_defaults(function, skip)
    return [p for p, _ in params], [p for p, d in params if d is None], function.args.kwarg is not None


def parameter_annotations(function: ast.FunctionDef, skip: int) -> list[tuple[str, str | None]]:
    """(name, annotation as written or None) of each parameter, the first `skip` left out."""
    args = function.args
    every = (args.posonlyargs + args.args)[skip:] + args.kwonlyargs
    return [(a.arg, None if a.annotation is None else ast.unparse(a.annotation)) for a in every]


def default_texts(node, classes: Flat, read=parameter_defaults) -> dict[str, str | None]:
    """Parameter → its default (or with `read=parameter_annotations` its annotation) as written, over
    `node`'s constructor and the bases it passes on to."""
    if isinstance(node, ast.FunctionDef):
        return dict(read(node, 0))
    init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    base = classes.base(node)
    inherited = default_texts(base, classes, read) if base is not None else {}
    if init is None:
        return inherited
    own = dict(read(init, 1))
    return own | {k: v for k, v in inherited.items() if k not in own} if init.args.kwarg else own


def constructor_signature(cls: ast.ClassDef, classes: Flat) -> tuple[list[str], list[str], bool]:
    """(parameters, required ones, open) of `cls`'s constructor, following its bases in `classes`."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    base = classes.base(cls)
    inherited = constructor_signature(base, classes) if base is not None else ([], [], False)
    if init is None:
        return inherited
    names, required, passes_on = parameters(init, skip=1)  # without self
    if not passes_on:
        return names, required, False
    if base is None:
        return names, required, True
    return (
        names + [p for p in inherited[0] if p not in names],
        required + [p for p in inherited[1] if p not in names],
        inherited[2],
    )


def class_attribute(cls: ast.ClassDef, classes: Flat, name: str, default, constants: dict | None = None):
    """The literal class attribute `name` of `cls` or of its nearest base in `classes`; a name in
    it is looked up among the class's own literal attributes, then `constants` (the literal
    module constants of the methods' files)."""
    for node in cls.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return literal(node.value, {**(constants or {}), **literal_constants([cls])})
    base = classes.base(cls)
    return class_attribute(base, classes, name, default, constants) if base is not None else default


def class_mapping(cls: ast.ClassDef, classes: Flat, constants: dict, name: str = "limits") -> dict:
    """The class's mapping attribute `name` (`limits`, `about`) over those of its bases (its own win)."""
    base = classes.base(cls)
    inherited = class_mapping(base, classes, constants, name) if base is not None else {}
    own = next(
        (
            node
            for node in cls.body
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ),
        None,
    )
    return inherited | (literal(own.value, {**constants, **literal_constants([cls])}) if own is not None else {})


def literal(node: ast.AST, constants: dict):
    """`ast.literal_eval` of `node`, each bare name replaced by its constant's value."""

    class Named(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name):
            if name.id not in constants:
                raise ValueError(f"{name.id} is not a literal constant of the methods' files")
            return ast.copy_location(ast.Constant(constants[name.id]), name)

    named = Named().visit(ast.parse(ast.unparse(node), mode="eval"))
    try:
        return ast.literal_eval(named)
    except ValueError:
        raise ValueError(f"{ast.unparse(node)} is no literal") from None


def literal_constants(trees) -> dict:
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


def defines(cls: ast.ClassDef, classes: Flat, method: str) -> bool:
    if any(isinstance(f, ast.FunctionDef) and f.name == method for f in cls.body):
        return True
    base = classes.base(cls)
    return base is not None and defines(base, classes, method)


def function_mapping(tree: ast.Module, function: str, name: str, constants: dict) -> dict:
    """A function's mapping attribute set at the top of its module (`hard_batches.about = {…}`)."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and node.targets[0].attr == name
            and isinstance(node.targets[0].value, ast.Name)
            and node.targets[0].value.id == function
        ):
            return literal(node.value, constants)
    return {}
