"""Name → class registries for losses, miners and samplers."""

from __future__ import annotations


class Registry:
    """Maps names used in the config to the classes that implement them."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, type] = {}

    def register(self, name: str):
        def add(cls: type) -> type:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = cls
            return cls

        return add

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> type:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(
                f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}"
            ) from None

    def build(self, name: str, **params):
        cls = self.get(name)
        try:
            return cls(**params)
        except TypeError as error:
            raise TypeError(f"{self.kind} {name!r}: bad parameters {params}: {error}") from None
