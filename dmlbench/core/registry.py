"""Name → implementation registries: every named thing of the config (datasets, backbones,
losses, miners, samplers, training schemes, analyses, figures) is looked up through one of these,
and an unknown name is refused with the closest known one and the full list."""

from __future__ import annotations

import difflib
import pkgutil
from importlib import import_module, metadata

from dmlbench.core import module_files


def did_you_mean(name: str, known) -> str:
    """' (did you mean 'x'?)' for the closest of `known`, or ''."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def entry_points(group: str) -> list:
    """The installed packages' entry points of `group`, by name."""
    return sorted(metadata.entry_points(group=group), key=lambda point: point.name)


def importable(name) -> bool:
    """Whether `name` is written `module:Attribute` and the module can be found (nothing of it
    imported, its parent packages neither: `module_files`)."""
    if not isinstance(name, str) or name.count(":") != 1:
        return False
    module, attribute = name.split(":")
    return bool(module) and attribute.isidentifier() and module_files.findable(module)


class Registry:
    """Maps the names used in the config to what implements them. Entries are registered with
    the `register(name)` decorator, or as `"module:attribute"` text (`register_lazy`) where importing
    the implementation would be slow (torch, matplotlib) and only its name is needed to validate a
    config. With `package`, every module of that package is imported on the first lookup, so that
    its decorators run: a new module registers itself, no list of modules to keep. With `group`,
    the Python entry points of that group (`dmlbench.losses`, …: an installed package's own
    components) are registered lazily under their names; and a name written `module:Attribute` is
    that attribute of an importable module (a user's own code, named in a methods file). Unknown
    names raise `error` (KeyError unless given)."""

    def __init__(
        self, kind: str, error: type[Exception] = KeyError, package: str | None = None, group: str | None = None
    ):
        self.kind = kind
        self.error = error
        self._entries: dict[str, object] = {}
        self._lazy: dict[str, str] = {}
        self._package = package  # None once its modules are imported
        self._group = group  # None once its entry points are registered

    def _discover(self) -> None:
        package, self._package = self._package, None
        if package:
            for module in pkgutil.iter_modules(import_module(package).__path__):
                import_module(f"{package}.{module.name}")
        group, self._group = self._group, None
        for point in entry_points(group) if group else ():
            if point.name in self._entries or point.name in self._lazy:
                raise self.error(
                    f"{self.kind} {point.name!r} of the installed package "
                    f"{point.dist.name if point.dist else '?'} (entry point {group}) is a built-in "
                    f"name too; give it another name in that package's entry points"
                )
            self._lazy[point.name] = point.value

    def register(self, name: str):
        def add(item):
            self._claim(name)
            self._entries[name] = item
            return item

        return add

    def register_lazy(self, name: str, target: str) -> None:
        """`target` is 'package.module:attribute', imported on first use."""
        self._claim(name)
        self._lazy[name] = target

    def unregister(self, name: str) -> None:
        """Forget `name` (a dataset of the user's CSV, registered anew when the file is read again)."""
        self._entries.pop(name, None)
        self._lazy.pop(name, None)

    def _claim(self, name: str) -> None:
        if name in self._entries or name in self._lazy:
            raise ValueError(f"{self.kind} {name!r} is registered twice")

    def __contains__(self, name) -> bool:
        self._discover()
        return name in self._entries or name in self._lazy or importable(name)

    def names(self) -> list[str]:
        self._discover()
        return sorted({*self._entries, *self._lazy})

    def check(self, name: str, where: str = "", error: type[Exception] | None = None) -> None:
        """Unless `name` is known, raise `error` (the registry's own by default) naming `where`,
        `name`, the closest known name and every known one."""
        if name not in self:
            prefix = f"{where}: " if where else ""
            hint = did_you_mean(name, self.names())
            raise (error or self.error)(f"{prefix}unknown {self.kind} {name!r}{hint}; known: {', '.join(self.names())}")

    def get(self, name: str):
        self.check(name)  # discovers the package's modules first
        if name not in self._entries:
            module, _, attribute = self._lazy.get(name, name).partition(":")
            self._entries[name] = getattr(import_module(module), attribute)
        return self._entries[name]

    def build(self, name: str, **params):
        cls = self.get(name)
        try:
            return cls(**params)
        except TypeError as error:
            raise TypeError(f"{self.kind} {name!r}: bad parameters {params}: {error}") from None
