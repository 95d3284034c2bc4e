"""The generated page of every paper's claims and the verdicts' margins (`docs/generated/claims.md`),
from the catalogue: the margin δ with its source and the median of the gains the papers claim, then
per paper its claims by kind, each with its rows, datasets, metrics, the paper's gain, source and note."""

from __future__ import annotations

import statistics

from dmlbench.config import margins
from dmlbench.config.plan import Plan
from dmlbench.report import markdown
from dmlbench.verdicts import claim_kinds


def claimed_gains(plan: Plan) -> list[float]:
    """|gain| of every gain claim of the papers' experiments with a printed gain."""
    return [
        abs(c["gain"])
        for key, exp in plan.experiments.items()
        if exp.get("paper")
        for c in exp.get("claims") or []
        if c.get("gain") is not None and c.get("kind", "gain") == "gain"
    ]


def page(plan: Plan, generated_note: str) -> str:
    default = margins.default(plan.config_dir)
    gains = claimed_gains(plan)
    lines = [
        "# Claims and margins",
        "",
        generated_note,
        "",
        "## The margin δ of the verdicts on the papers' numbers",
        "",
        f"Default band: **{default['band']} points** (plus half a unit of the paper's last printed digit). "
        f"Source: {default['source'].strip()}",
        "",
        f"Today the catalogue's {len(gains)} claimed gains have a median of {statistics.median(gains):.2f} points "
        f"(from {min(gains):.2f} to {max(gains):.2f})."
        if gains
        else "",
        "",
    ]
    own = [(key, exp["margin"]) for key, exp in plan.experiments.items() if exp.get("margin")]
    if own:
        lines += ["Experiments with a margin of their own:", ""]
        lines += [f"- `{key}`: band {margin['band']}; {margin['source']}" for key, margin in own] + [""]
    for paper, title in plan.papers.items():
        keyed = [
            (key, c)
            for key, exp in plan.experiments.items()
            if (exp.get("paper") or key.split(".")[0]) == paper
            for c in exp.get("claims") or []
        ]
        if not keyed:
            continue
        kinds = {}
        for _, c in keyed:
            kinds[c.get("kind", "gain")] = kinds.get(c.get("kind", "gain"), 0) + 1
        lines += [
            f"## {paper}: {len(keyed)} claims",
            "",
            f"{title}. By kind: " + ", ".join(f"{n} {kind}" for kind, n in kinds.items()) + ".",
            "",
            "| experiment | id | kind | statement | rows | datasets | metrics | paper's gain | source | note |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for key, c in keyed:
            gain = "–" if c.get("gain") is None else f"{c['gain']:+g}"
            lines.append(
                markdown.row(
                    [
                        f"`{key}`",
                        f"`{c['id']}`",
                        c.get("kind", "gain"),
                        c["text"],
                        claim_kinds.rows_text(c),
                        ", ".join(claim_kinds.listed(c["dataset"])),
                        ", ".join(claim_kinds.listed(c["metric"])),
                        gain,
                        c["source"],
                        c.get("note", ""),
                    ]
                )
            )
        lines.append("")
        lines += _review(plan, paper)
    return "\n".join(lines)


def _review(plan: Plan, paper: str) -> list[str]:
    """What the independent reviewer read in the paper and what the catalogue made of it."""
    from dmlbench.config.loading import load_yaml

    entries = (load_yaml(plan.config_dir / "claims_review.yaml") or {}).get(paper) or []
    if not entries:
        return []
    counts = {what: sum(what in e for e in entries) for what in ("catalogued", "same_as", "left_out")}
    lines = [
        f"**Independent review** (`workflow/config/claims_review.yaml`): {len(entries)} sentences read from the "
        f"text alone; {counts['catalogued']} catalogued, {counts['same_as']} the same statement as another, "
        f"{counts['left_out']} left out.",
        "",
        "| reviewer's reading | where | kind | in the catalogue |",
        "|---|---|---|---|",
    ]
    for e in entries:
        if "catalogued" in e:
            answer = "; ".join(f"`{key}`: " + ", ".join(f"`{i}`" for i in ids) for key, ids in e["catalogued"].items())
            answer += f" ({e['differs']})" if e.get("differs") else ""
        elif "same_as" in e:
            answer = f"same as `{e['same_as']}`"
        else:
            answer = f"left out: {e['left_out']}"
        lines.append(markdown.row([f'`{e["reviewer"]}`: "{e["quote"]}"', e["location"], e["kind"], answer]))
    return lines + [""]
