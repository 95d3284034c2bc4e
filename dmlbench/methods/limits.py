"""What a component's parameter values may be: of its annotation's type (`of_type`) and within its
`limits` (`within`), as `dmlbench.methods.declared.check_values` checks a config's values; and the
`limits` a class declares, checked when it is read (`check_declared`): each entry a form `within`
reads, naming a parameter its constructor takes, so that no limit is dropped without a word (a
limit of `margn` would leave `margin` unchecked)."""

from __future__ import annotations

import math
import re

from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
FORMS = (
    re.compile(rf"(?:>=|<=|>|<)\s*{_NUMBER}"),  # "> 0", ">= 1", "< 1", "<= 0.5"
    re.compile(rf"[\[(]\s*{_NUMBER}\s*,\s*{_NUMBER}\s*[\])]"),  # "[-1, 1]", "(0, 1]"
)
SAID = (
    "'> a', '>= a', '< a', '<= a', an interval '[a, b]' (brackets: ends included, parentheses: not) "
    "or a tuple of the values allowed"
)


def check_declared(limits: dict, params, open_: bool, where: str) -> None:
    """Each `limits` entry a form the plan reads and (unless the constructor takes any keyword)
    a parameter of `params`; else ConfigError naming `where` (the class's file:line), the entry
    and what to write."""
    for key, limit in limits.items():
        if not open_ and key not in params:
            raise ConfigError(
                f"{where}: limits names {key!r}, which the constructor does not take"
                f"{did_you_mean(key, params)}; its parameters: {', '.join(params) or 'none'}"
            )
        if isinstance(limit, (tuple, list)):
            continue
        if not isinstance(limit, str) or not any(form.fullmatch(limit.strip()) for form in FORMS):
            raise ConfigError(f"{where}: limits[{key!r}] = {limit!r} is not a limit the plan reads; write {SAID}")


def of_type(value, annotation: str) -> bool:
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


TYPE_NAMES = {"int": "an int", "float": "a float", "bool": "a bool", "str": "a str", "None": "None"}


def type_name(annotation: str) -> str:
    """The type a value of `annotation` must be, as a message says it: "a float", "an int or None"."""
    return " or ".join(TYPE_NAMES.get(part.strip(), part.strip()) for part in annotation.split("|"))


def within(value, limit) -> bool:
    """`limit`: "> a", ">= a", "< a", "<= a", an interval "[a, b]" (brackets: ends included,
    parentheses: not), or a tuple of the values allowed."""
    if isinstance(limit, (tuple, list)):
        return value in limit
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    text = limit.replace(" ", "")
    for sign, test in ((">=", float.__ge__), ("<=", float.__le__), (">", float.__gt__), ("<", float.__lt__)):
        if text.startswith(sign):
            return test(float(value), float(text[len(sign) :]))
    low, high = (float(end) for end in text[1:-1].split(","))
    return ((low <= value) if text[0] == "[" else (low < value)) and (
        (value <= high) if text[-1] == "]" else (value < high)
    )


def shown(limit) -> str:
    return f"one of {', '.join(map(repr, limit))}" if isinstance(limit, (tuple, list)) else str(limit)
