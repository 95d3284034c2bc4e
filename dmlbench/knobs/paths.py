"""The paths from a paper's recipe to the fair one (suite.knobs): *cumulative* (the knobs moved
one after the other, in the catalogue's order: step k moves knobs 1..k), *forward* (each knob
moved alone from the paper's recipe, with the knobs it `needs`; its effect is measured against the
step that moves those alone, or against the paper's recipe) and *backward* (each knob reverted
alone from the fair recipe, with the knobs that need it; its effect is measured as the step that
keeps it minus the step that reverts it). A step is the set of knobs it moves; steps with the same
set are one run, named once (`upto-K`, `only-K`, else `without-K…` by the knobs it reverts or
`set-K…` by those it moves, whichever list is shorter; knob names joined by `-`, as a run's
name allows)."""

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
    """The steps of one recipe: `cumulative[k]` moves the first k+1 knobs; `alone[knob]` and
    `back[knob]` are the (step, base) pairs whose difference is the knob's forward and backward
    effect (the step moves the knob, its base does not)."""

    knobs: tuple[str, ...]
    paper: Step
    cumulative: tuple[Step, ...]
    alone: dict
    back: dict

    @property
    def steps(self) -> list[Step]:
        """Every distinct step that is run, the paper's recipe first: those of the forward and
        backward effects (the shares and the waterfall need no other) and the fair recipe. A
        cumulative step that is none of them is not run: only the order-dependent cumulative
        column would read it (`cumulative_only`)."""
        seen: dict[tuple, Step] = {self.paper.moved: self.paper}
        pairs = list(self.alone.values()) + list(self.back.values())
        for step in [s for pair in pairs for s in pair] + [self.cumulative[-1]]:
            seen.setdefault(step.moved, step)
        ordered = [s for s in self.cumulative if s.moved in seen]  # in path order where a step is both
        return [self.paper] + list(dict.fromkeys(ordered + [s for s in seen.values() if s.moved]))

    @property
    def cumulative_only(self) -> list[Step]:
        """The cumulative steps no share needs, which are not run."""
        run = {s.moved for s in self.steps}
        return [s for s in self.cumulative if s.moved not in run]


def _closure(knob: str, needs: dict) -> set[str]:
    out, todo = set(), list(needs.get(knob, ()))
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo += list(needs.get(name, ()))
    return out


def _dependents(knob: str, knobs: list[str], needs: dict) -> set[str]:
    """The knobs that need `knob`, directly or through others."""
    return {name for name in knobs if knob in _closure(name, needs)}


def build(knobs: list[str], needs: dict[str, tuple[str, ...]]) -> Paths:
    """The paths over `knobs` (in path order; a knob's needs among them come before it)."""
    order = {name: i for i, name in enumerate(knobs)}
    for name in knobs:
        missing = [n for n in needs.get(name, ()) if n not in order or order[n] > order[name]]
        if missing:
            raise ValueError(f"knob {name} needs {missing}, which the path does not move before it")

    def ordered(names) -> tuple[str, ...]:
        return tuple(sorted(names, key=order.__getitem__))

    prefixes = {tuple(knobs[: k + 1]): f"upto-{knobs[k]}" for k in range(len(knobs))}
    alone_sets = {ordered({name} | _closure(name, needs)): f"only-{name}" for name in knobs}

    def step(moved: set[str]) -> Step:
        key = ordered(moved)
        if not key:
            return Step(PAPER, ())
        reverted = [k for k in knobs if k not in key]
        named = "set-" + "-".join(key) if len(key) < len(reverted) else "without-" + "-".join(reverted)
        name = prefixes.get(key) or alone_sets.get(key) or named
        return Step(name, key)

    cumulative = tuple(step(set(knobs[: k + 1])) for k in range(len(knobs)))
    alone = {name: (step({name} | _closure(name, needs)), step(_closure(name, needs))) for name in knobs}
    every = set(knobs)
    back = {
        name: (step(every - _dependents(name, knobs, needs)), step(every - _dependents(name, knobs, needs) - {name}))
        for name in knobs
    }
    return Paths(tuple(knobs), Step(PAPER, ()), cumulative, alone, back)
