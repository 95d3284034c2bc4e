"""The generated page of the knobs (`docs/generated/knobs.md`): every paper's recipe beside the
fair recipe, knob by knob, per dataset, and the steps `suite.knobs` trains at `full`."""

from __future__ import annotations

from dmlbench.config import knob_recipes
from dmlbench.config.plan import Plan
from dmlbench.report import markdown


def page(plan: Plan, generated: str) -> str:
    """Markdown: every paper's recipe beside the fair recipe, knob by knob, per dataset, and the
    steps `suite.knobs` trains at `full`."""
    paths = {(p.paper, p.dataset): p for p in plan.knob_paths("suite.knobs")}
    runs = plan.runs("suite.knobs")
    lines = [
        "# Paper recipes and the fair recipe: the knobs",
        "",
        generated,
        "",
        "Each paper's recipe (the paper-table run of its headline method) and the fair recipe (`suite.fair`'s "
        "settings of the same method, with the paper's hyper-parameters) differ in these knobs, derived "
        "from the two resolved configs. The knobs' order is the order of the cumulative path; "
        "[The knob experiment](../knobs.md) describes the paths and the report, "
        "[the fair table](../fair-table.md) the fair protocol.",
        "",
        f"At `full`, `suite.knobs` trains {len(runs):,} runs: {len(paths)} paper × dataset paths, each for the "
        f"headline method and the baseline, over seeds {plan.knob_seeds('suite.knobs')}; a step that moves "
        f"the evaluation knob trains {plan.knob_folds} fold runs per seed.",
        "",
    ]
    for recipe in knob_recipes.recipes(plan):
        lines += [
            f"## {recipe.paper} on {recipe.dataset}: `{recipe.paper_run.experiment}` "
            f"`{recipe.paper_run.method}` vs `suite.fair` `{recipe.method}`",
            "",
            "| knob | setting | paper's recipe | fair recipe |",
            "|---|---|---|---|",
        ]
        for knob in knob_recipes.knobs_of(plan, recipe):
            for key in knob.paper:
                cells = [
                    knob.label,
                    "(protocol)" if key == "protocol" else f"`{key}`",
                    _shown(knob.paper[key]),
                    _shown(knob.fair[key]),
                ]
                lines.append(markdown.row(cells))
        path = paths.get((recipe.paper, recipe.dataset))
        if path is not None:
            lines += [
                "",
                "Steps (each a run per method and seed; `only-K`: knob K alone, with the knobs it needs; "
                "`upto-K`: every knob up to K; `without-K…`: every knob but those, the backward path's "
                "fair recipe with K reverted):",
                "",
                "| step | knobs moved |",
                "|---|---|",
            ]
            lines += [
                markdown.row([f"`{step.name}`", ", ".join(step.moved) or "none (the paper's recipe)"])
                for step in path.paths.steps
            ]
            if path.paths.cumulative_only:  # said, so that a reader does not look for them
                lines += [
                    "",
                    "Not run (the cumulative path's order-dependent steps that no share needs): "
                    + ", ".join(f"`{step.name}`" for step in path.paths.cumulative_only)
                    + ".",
                ]
        lines.append("")
    return "\n".join(lines) + "\n"


def _shown(value) -> str:
    return (
        value
        if isinstance(value, str) and " " in value
        else markdown.code(list(value) if isinstance(value, tuple) else value)
    )
