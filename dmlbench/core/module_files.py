"""Finding a module's source file without importing it, its parent packages included:
`importlib.util.find_spec("a.b")` imports the package `a` (its `__init__.py` runs), which a plan
that only reads sources must not do. Each level is asked of the import system's finders, with the
folders of the level above as the search path, as the import system itself does before it runs
anything."""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec


def find(module: str) -> ModuleSpec:
    """The spec of `module` ("a.b.c"), found without running any of its code or its parents';
    ModuleNotFoundError (in the import system's words) where some level is not found or is a
    module, not a package, with a level below it."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        raise ModuleNotFoundError(f"{module!r} is no dotted module name")
    spec, path = None, None
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if depth > 1:
            parent = sys.modules.get(".".join(parts[: depth - 1]))  # already imported: its own path
            path = getattr(parent, "__path__", None) or (spec.submodule_search_locations if spec else None)
            if path is None:
                raise ModuleNotFoundError(
                    f"No module named {name!r}; {'.'.join(parts[: depth - 1])!r} is not a package"
                )
        spec = _ask_finders(name, path)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}")
    return spec


def _ask_finders(name: str, path) -> ModuleSpec | None:
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        spec = find_spec(name, path)
        if spec is not None:
            return spec
    return None


def source_file(module: str) -> str | None:
    """The `.py` file of `module` (ModuleNotFoundError where it is not found), or None where it
    is no Python source (a built-in or compiled module, a namespace package)."""
    origin = find(module).origin
    return origin if origin and origin.endswith(".py") else None


def findable(module: str) -> bool:
    """Whether `module` can be found (nothing of it imported)."""
    try:
        find(module)
    except (ModuleNotFoundError, ValueError):
        return False
    return True
