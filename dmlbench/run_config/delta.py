"""A run's settings as changes to another run's (a GPU job's spec carries the settings its fold
trainings share once, and each fold's differences: tens of copies of the same settings would make
the job's command line long, slow to print and, past 128 KiB, refused by Linux)."""

from __future__ import annotations

import copy


def changes(base: dict, settings: dict) -> list | None:
    """[[key path, value], …] that turn `base` into `settings`; None where their mappings differ
    in keys (the caller keeps `settings` whole). Subtrees are compared with `==` (an int and a
    float of one value inside an equal subtree count as the same: the settings of one method's
    fold trainings come from one resolution, where they do not differ so)."""
    found: list = []

    def walk(a: dict, b: dict, path: list) -> bool:
        if set(a) != set(b):
            return False
        for key in a:
            if a[key] == b[key] and type(a[key]) is type(b[key]):
                continue  # the same subtree (a dict comparison, in C): nothing to walk
            if isinstance(a[key], dict) and isinstance(b[key], dict):
                if not walk(a[key], b[key], path + [key]):
                    return False
            else:
                found.append([path + [key], copy.deepcopy(b[key])])
        return True

    return found if walk(base, settings, []) else None


def apply(base: dict, found: list) -> dict:
    """`base` with `found` (what `changes` gave) applied: a new mapping."""
    out = copy.deepcopy(base)
    for path, value in found:
        node = out
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = copy.deepcopy(value)
    return out
