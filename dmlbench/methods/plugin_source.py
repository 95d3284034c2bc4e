"""A user's component read from its source files, none of them imported (`dmlbench.core.module_files`):
the class a `module:Class` name or an entry point names, its bases followed through the imports of
each module (`from .base import MyBase`, `from dmlbench.methods.losses.base import PairLoss`,
`import my_dml.base as b` … `b.MyBase`), whether it is a dmlbench component (a subclass of the
family's documented base), and the sha256 of the user's files it is made of (`code`)."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

from dmlbench.core import module_files
from dmlbench.core.registry import did_you_mean

DMLBENCH = Path(__file__).resolve().parents[1]
# the documented bases of each family: a component subclasses one of them (docs/howto/add-method.md)
ROOTS = {
    "loss": (DMLBENCH / "methods" / "losses" / "base.py", ("PairLoss", "ProxyLoss")),
    "miner": (DMLBENCH / "methods" / "miners" / "base.py", ("Miner",)),
    "sampler": (DMLBENCH / "methods" / "samplers" / "base.py", ("BatchSampler",)),
}
_DEPTH = 32  # re-exports followed at most this deep (a cycle of imports ends)


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module


def _dotted(node: ast.expr) -> list[str]:
    """`a.b.C` as ["a", "b", "C"]; [] for an expression that is no dotted name."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return head + [node.attr] if head else []
    return []


class Lineage:
    """The classes reachable from the modules read, each with the module it is defined in. `trees`
    (path → tree) are sources already read (the package's own: their classes stay the same nodes)."""

    def __init__(self, trees: dict[Path, ast.Module]):
        self._trees = {Path(path).resolve(): tree for path, tree in trees.items()}
        self._modules: dict[str, Module | None] = {}
        self._home: dict[int, Module] = {}

    def module(self, name: str) -> Module | None:
        """Module `name` read from its source; ModuleNotFoundError where it is not found, None
        where it is no Python source file."""
        if name not in self._modules:
            path = module_files.source_file(name)
            if path is None:
                self._modules[name] = None
            else:
                path = Path(path).resolve()
                tree = self._trees.get(path) or ast.parse(path.read_text(), str(path))
                self._trees[path] = tree
                self._modules[name] = found = Module(name, path, tree)
                for node in ast.walk(tree):
                    if isinstance(node, ast.ClassDef):
                        self._home.setdefault(id(node), found)
        return self._modules[name]

    def _quiet(self, name: str) -> Module | None:
        try:
            return self.module(name)
        except (ModuleNotFoundError, SyntaxError, UnicodeDecodeError, OSError):
            return None

    def home(self, cls: ast.ClassDef) -> Module:
        return self._home[id(cls)]

    def lookup(self, module: Module, dotted: list[str], depth: int = 0) -> ast.ClassDef | None:
        """The class `dotted` (["MyBase"], ["b", "MyBase"]) names in `module`, wherever defined."""
        if not dotted or depth > _DEPTH:
            return None
        first, rest = dotted[0], dotted[1:]
        if not rest:
            own = next((n for n in module.tree.body if isinstance(n, ast.ClassDef) and n.name == first), None)
            if own is not None:
                return own
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == first:
                        source = self._absolute(module, node)
                        sub = self._quiet(f"{source}.{alias.name}")  # `from pkg import submodule`
                        if sub is not None:
                            return self.lookup(sub, rest, depth + 1)
                        origin = self._quiet(source)
                        return origin and self.lookup(origin, [alias.name, *rest], depth + 1)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname == first:
                        target = self._quiet(alias.name)
                        return target and self.lookup(target, rest, depth + 1)
                    if alias.asname is None and alias.name.split(".")[0] == first:
                        for cut in range(len(dotted) - 1, 0, -1):  # `import a.b` … `a.b.C`
                            target = self._quiet(".".join(dotted[:cut]))
                            if target is not None:
                                return self.lookup(target, dotted[cut:], depth + 1)
        return None

    @staticmethod
    def _absolute(module: Module, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{node.module}" if node.module else package

    def bases(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """`cls`'s bases that can be read from source, in order."""
        home = self.home(cls)
        found = (self.lookup(home, _dotted(base)) for base in cls.bases)
        return [base for base in found if base is not None]

    def base(self, cls: ast.ClassDef) -> ast.ClassDef | None:
        """The first of `cls`'s bases read from source (`dmlbench.methods.source_reading`'s view)."""
        return next(iter(self.bases(cls)), None)

    def ancestry(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """`cls` and every base above it that can be read from source."""
        seen, stack = [], [cls]
        while stack:
            node = stack.pop()
            if all(node is not other for other in seen):
                seen.append(node)
                stack.extend(self.bases(node))
        return seen

    def is_component(self, cls: ast.ClassDef, family: str) -> bool:
        path, names = ROOTS[family]
        return any(self.home(c).path == path and c.name in names for c in self.ancestry(cls))

    def code(self, cls: ast.ClassDef) -> dict[str, str]:
        """Module → sha256 of its file, for the user's files the class is made of: its module, the
        modules of its package it imports (and theirs), the modules of its bases outside dmlbench."""
        modules = {self.home(c).name: self.home(c) for c in self.ancestry(cls)}
        top = self.home(cls).name.split(".")[0]
        todo = [self.home(cls)]
        while todo:
            for name in self._imported(todo.pop()):
                if name.split(".")[0] == top and name not in modules:
                    found = self._quiet(name)
                    if found is not None:
                        modules[name] = found
                        todo.append(found)
        return {
            name: hashlib.sha256(module.path.read_bytes()).hexdigest()
            for name, module in sorted(modules.items())
            if not module.path.is_relative_to(DMLBENCH)
        }

    def _imported(self, module: Module) -> list[str]:
        names = []
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = self._absolute(module, node)
                names += [source, *(f"{source}.{alias.name}" for alias in node.names)]
        return names


def checkout_own(module: str) -> Path | None:
    """The checkout's own package or module (beside `dmlbench`: `benchmarks`) whose top-level
    name `module` has: the checkout is first on every job's path, so a user's package of that name
    would never be the one a job imports."""
    top = module.split(".")[0]
    if top == DMLBENCH.name:
        return None
    return next((p for p in (DMLBENCH.parent / top / "__init__.py", DMLBENCH.parent / f"{top}.py") if p.exists()), None)


def bases_text(family: str) -> str:
    """The documented bases of `family`, as one imports them."""
    path, names = ROOTS[family]
    module = ".".join(path.relative_to(DMLBENCH.parent).with_suffix("").parts)
    return f"{' or '.join(names)} (from {module} import {', '.join(names)})"


def not_a_class(lineage, found, attribute: str, family: str) -> str:
    """Why `attribute` of module `found` is no class it defines: a function, a class it imports
    (and where that is defined), or nothing of that name."""
    tree, module = found.tree, found.name
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == attribute), None)
    if function is not None:
        return (
            f"{attribute} ({found.path}:{function.lineno}) is a function; a {family} is a class, a subclass of "
            f"{bases_text(family)}"
        )
    imported = lineage.lookup(found, [attribute])
    if imported is not None:
        home = lineage.home(imported)
        return (
            f"{module} does not define {attribute!r}, it imports it: the class is defined in {home.name} "
            f"({home.path}:{imported.lineno}); name it {home.name}:{attribute}"
        )
    return (
        f"{found.path} defines no class {attribute!r} at its top level"
        f"{did_you_mean(attribute, [n.name for n in tree.body if isinstance(n, ast.ClassDef)])}"
    )
