"""The two paths from a paper's recipe to the fair one (suite.knobs): *cumulative* (the knobs moved
one after the other, in the catalogue's order: step k moves knobs 1..k) and *one at a time* (each
knob moved alone, with the knobs it `needs`; its effect is measured against the step that moves
those alone, or against the paper's recipe). A step is the set of knobs it moves; steps with the
same set are one run, named once."""

from __future__ import annotations

from dataclasses import dataclass

PAPER = "paper"


@dataclass(frozen=True)
class Step:
    """A set of moved knobs (in path order) and its name, the run variant that trains it."""

    name: str
    moved: tuple[str, ...]


@dataclass(frozen=True)
class Paths:
    """The steps of one recipe: `cumulative[k]` moves the first k+1 knobs; `alone[knob]` is the
    (step, base) pair whose difference is the knob's one-at-a-time effect."""

    knobs: tuple[str, ...]
    paper: Step
    cumulative: tuple[Step, ...]
    alone: dict

    @property
    def steps(self) -> list[Step]:
        """Every distinct step, the paper's recipe first."""
        seen: dict[tuple, Step] = {self.paper.moved: self.paper}
        for step in list(self.cumulative) + [s for pair in self.alone.values() for s in pair]:
            seen.setdefault(step.moved, step)
        return list(seen.values())


def _closure(knob: str, needs: dict) -> set[str]:
    out, todo = set(), list(needs.get(knob, ()))
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo += list(needs.get(name, ()))
    return out


def build(knobs: list[str], needs: dict[str, tuple[str, ...]]) -> Paths:
    """The paths over `knobs` (in path order; a knob's needs among them come before it)."""
    order = {name: i for i, name in enumerate(knobs)}
    for name in knobs:
        missing = [n for n in needs.get(name, ()) if n not in order or order[n] > order[name]]
        if missing:
            raise ValueError(f"knob {name} needs {missing}, which the path does not move before it")

    def ordered(names) -> tuple[str, ...]:
        return tuple(sorted(names, key=order.__getitem__))

    prefixes = {tuple(knobs[:k + 1]): f"upto-{knobs[k]}" for k in range(len(knobs))}
    alone_sets = {ordered({name} | _closure(name, needs)): f"only-{name}" for name in knobs}

    def step(moved: set[str]) -> Step:
        key = ordered(moved)
        if not key:
            return Step(PAPER, ())
        name = prefixes.get(key) or alone_sets.get(key) or "set-" + "+".join(key)
        return Step(name, key)

    cumulative = tuple(step(set(knobs[:k + 1])) for k in range(len(knobs)))
    alone = {name: (step({name} | _closure(name, needs)), step(_closure(name, needs))) for name in knobs}
    return Paths(tuple(knobs), Step(PAPER, ()), cumulative, alone)
