"""suite.knobs' report folder: every step's numbers (`steps.csv`), the attribution of each
recipe's change to its knobs (`attribution.csv`, `attribution.md`: forward, backward, the
order-free share, the remainder, the total, and the same for the headline's gap over the
baseline), the pairwise interactions four steps measure (`interactions.csv`), a waterfall per
paper × dataset (`waterfalls/<paper>_<dataset>.png`) and the landing page's line per paper
(`landing.json`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dmlbench.data import datasets
from dmlbench.core.io import atomic_path, read_json, write_json
from dmlbench.knobs import attribution, interactions, landing, paired, shares
from dmlbench.plots import waterfall

PAIR_COLUMNS = ["paper", "dataset", "method", "knobs", "background", "effect", "low", "high", "p", "untested"]
HEADER = [
    "| method | knob | paper → fair | forward | backward | share | p (Holm) | cumulative step |",
    "|---|---|---|---|---|---|---|---|",
]


def _values(recipe: dict, method: dict, seeds: list[int]) -> dict[str, dict[int, float]]:
    return {
        step: {seed: attribution.step_value(Path(path), recipe, step) for seed, path in zip(seeds, files)}
        for step, files in method["steps"].items()
    }


def _tuned(path: str | None) -> tuple[float, float] | None:
    if not path or not Path(path).exists():
        return None
    value = read_json(path)["concatenated"][attribution.METRIC]
    return 100 * value["mean"], 100 * value["ci95"]


def _fmt(mean: float, low: float = math.nan, high: float = math.nan) -> str:
    return landing.points(mean) + ("" if math.isnan(low) else f" [{landing.points(low)}, {landing.points(high)}]")


def _p(row: dict) -> str:
    if math.isnan(row["p_holm"]):
        return row.get("untested") or "–"
    return f"{row['p_holm']:.3f}" + (" *" if row["significant"] else "")


def _method_rows(recipe: dict, name: str, label: str, result: dict) -> tuple[list[dict], list[str]]:
    """The CSV rows and markdown lines of one method's attribution."""
    rows, lines = [], []
    cumulative = {row["knob"]: row for row in result["cumulative"]}
    forward = {row["knob"]: row for row in result["alone"]}
    backward = {row["knob"]: row for row in result["back"]}
    for row in result["shares"]:
        knob = next(k for k in recipe["knobs"] if k["name"] == row["knob"])
        moved = "; ".join(f"{key} {knob['paper'][key]} → {knob['fair'][key]}" for key in knob["paper"])
        step, ahead, behind = cumulative[row["knob"]], forward[row["knob"]], backward[row["knob"]]
        rows.append(
            {
                "paper": recipe["paper"],
                "dataset": recipe["dataset"],
                "method": name,
                "knob": row["knob"],
                "label": knob["label"],
                "settings": moved,
                "share": row["effect"],
                "share_low": row["low"],
                "share_high": row["high"],
                "p_holm": row["p_holm"],
                "significant": row["significant"],
                "untested": row["untested"],
                "forward": ahead["effect"],
                "forward_low": ahead["low"],
                "forward_high": ahead["high"],
                "backward": behind["effect"],
                "backward_low": behind["low"],
                "backward_high": behind["high"],
                "cumulative_in_path_order": step["effect"],  # depends on the knobs before it; the share does not
            }
        )
        in_order = "not run" if math.isnan(step["effect"]) else _fmt(step["effect"])
        lines.append(
            f"| {label} | {knob['label']} | {moved} | {_fmt(ahead['effect'], ahead['low'], ahead['high'])} | "
            f"{_fmt(behind['effect'], behind['low'], behind['high'])} | "
            f"{_fmt(row['effect'], row['low'], row['high'])} | {_p(row)} | {in_order} |"
        )
    for knob in ("remainder", "total"):
        part = result[knob]
        rows.append(
            {
                "paper": recipe["paper"],
                "dataset": recipe["dataset"],
                "method": name,
                "knob": knob,
                "label": knob,
                "share": part["effect"],
                "share_low": part["low"],
                "share_high": part["high"],
            }
        )
    steps = result["steps"]
    lines.append(f"| {label} | {_remainder_label(recipe)} | | | | {_fmt(**_trio(result['remainder']))} | | |")
    lines.append(
        f"| {label} | total (paper {steps['paper']['mean']:.1f} "
        f"→ fair {steps[result['fair_step']]['mean']:.1f}) "
        f"| | | | {_fmt(**_trio(result['total']))} | | |"
    )
    return rows, lines


def _remainder_label(recipe: dict) -> str:
    """An identity of the design is said as such, not shown as if measured."""
    return "remainder (0 by construction)" if shares.remainder_by_construction(recipe) else "remainder (higher-order)"


def _trio(part: dict) -> dict:
    return {"mean": part["effect"], "low": part["low"], "high": part["high"]}


def _gap_lines(gap: dict, levels: tuple[float, float], labels: dict, head: str, base: str, recipe: dict) -> list[str]:
    lines = [
        "",
        f"Gap of {head} over {base} (points, the seeds both ran): {levels[0]:+.1f} under the paper's "
        f"recipe, {levels[1]:+.1f} under the fair one; each knob's share of its change:",
        "",
        "| knob | forward | backward | share | p (Holm) |",
        "|---|---|---|---|---|",
    ]
    for row in gap["shares"]:
        lines.append(
            f"| {labels[row['knob']]} | {row['forward']:+.1f} | {row['backward']:+.1f} | "
            f"{_fmt(row['effect'], row['low'], row['high'])} | {_p(row)} |"
        )
    lines.append(f"| {_remainder_label(recipe)} | | | {_fmt(**_trio(gap['remainder']))} | |")
    lines.append(f"| change of the gap | | | {_fmt(**_trio(gap['total']))} | |")
    return lines + [""]


def _panel(start: tuple, rows: list[dict], remainder: dict, end: tuple, labels: dict) -> dict:
    steps = [(labels[row["knob"]], row["effect"], row["low"], row["high"]) for row in rows]
    steps.append(("remainder", remainder["effect"], remainder["low"], remainder["high"]))
    return {"start": start, "steps": steps, "end": end}


def aggregate(spec: dict, output_dir: Path) -> dict:
    output_dir = Path(output_dir)
    (output_dir / "waterfalls").mkdir(parents=True, exist_ok=True)
    steps_rows, rows, pair_rows, body, parts, names = [], [], [], [], {}, {}
    for recipe in spec["recipes"]:
        labels = {k["name"]: k["label"] for k in recipe["knobs"]}
        dataset = _label(recipe["dataset"])
        values, results = {}, {}
        for name, method in recipe["methods"].items():
            values[name] = _values(recipe, method, spec["seeds"])
            results[name] = attribution.method_attribution(recipe, values[name])
            for step, per_seed in values[name].items():
                steps_rows.append(
                    {
                        "paper": recipe["paper"],
                        "dataset": recipe["dataset"],
                        "method": name,
                        "step": step,
                        "moved": "+".join(recipe["moved"][step]) or "none",
                        **{f"seed{s}": v for s, v in per_seed.items()},
                        **results[name]["steps"][step],
                    }
                )
        head, base = recipe["headline"], recipe["baseline"]
        head_label, base_label = recipe["methods"][head]["label"], recipe["methods"][base]["label"]
        gap_values = shares.gap_values(values[head], values[base])
        gap = shares.method_shares(recipe, gap_values)
        fair_step = results[head]["fair_step"]
        levels = (
            paired.interval(list(gap_values["paper"].values()))[0],
            paired.interval(list(gap_values[fair_step].values()))[0],
        )
        steps = results[head]["steps"]
        printed = float(recipe["paper_number"]) if recipe["paper_number"] else None
        reproduction = (printed, steps["paper"]["mean"]) if printed is not None else None
        source = f" (the {_label(recipe['stand_in'])} recipe)" if recipe["stand_in"] else ""
        body += [
            f"## {recipe['paper']}: {head_label} on {dataset}{source}",
            "",
            f"![waterfall]({recipe['figure']})",
            "",
            f"Paper's recipe: {recipe['source']}. Recall@1 in %, effects in points with their paired 95 % "
            f"interval over seeds {spec['seeds']}. Forward: the knob moved from the paper's recipe; backward: "
            f"reverted from the fair recipe; share: their mean, seed by seed (order-free; p Holm-adjusted "
            f"over the recipe's knobs).",
            "",
        ]
        if reproduction:
            body += [
                f"Reproduction gap: the paper prints {printed:.1f}, ours under its recipe "
                f"{steps['paper']['mean']:.1f} ({printed - steps['paper']['mean']:+.1f} points).",
                "",
            ]
        body += HEADER
        for name, result in results.items():
            csv_rows, lines = _method_rows(recipe, name, recipe["methods"][name]["label"], result)
            rows += csv_rows
            body += lines
        body += _gap_lines(gap, levels, labels, head_label, base_label, recipe)
        top = [r["knob"] for r in sorted(results[head]["shares"], key=lambda r: -abs(r["effect"]))[:3]]
        pairs = interactions.measured(recipe, values[head], top)
        body += interactions.markdown(pairs, labels, head_label)
        pair_rows += [
            {
                "paper": recipe["paper"],
                "dataset": recipe["dataset"],
                "method": head,
                "knobs": "×".join(p["pair"]),
                "background": "+".join(p["background"]),
                **{k: p[k] for k in ("effect", "low", "high", "p", "untested")},
            }
            for p in pairs
        ]
        rows += [
            {
                "paper": recipe["paper"],
                "dataset": recipe["dataset"],
                "method": "gap",
                "knob": row["knob"],
                "label": labels[row["knob"]],
                "share": row["effect"],
                "share_low": row["low"],
                "share_high": row["high"],
                "p_holm": row["p_holm"],
                "significant": row["significant"],
                "untested": row["untested"],
                "forward": row["forward"],
                "backward": row["backward"],
            }
            for row in gap["shares"]
        ]
        rows += [
            {
                "paper": recipe["paper"],
                "dataset": recipe["dataset"],
                "method": "gap",
                "knob": knob,
                "label": knob,
                "share": gap[knob]["effect"],
                "share_low": gap[knob]["low"],
                "share_high": gap[knob]["high"],
            }
            for knob in ("remainder", "total")
        ]
        parts.setdefault(recipe["paper"], []).append(
            landing.dataset_part(dataset, gap, levels, labels, reproduction, shares.remainder_by_construction(recipe))
        )
        names[recipe["paper"]] = (head_label, base_label)
        level = _panel(
            ("ours, paper's recipe", steps["paper"]["mean"], steps["paper"]["ci95"]),
            results[head]["shares"],
            results[head]["remainder"],
            ("fair recipe", steps[fair_step]["mean"], steps[fair_step]["ci95"]),
            labels,
        )
        waterfall.draw(
            {
                "title": f"{recipe['paper']}: {head_label} on {dataset}{source}",
                "baseline_label": base_label,
                "level": {**level, "printed": printed, "tuned": _tuned(recipe["methods"][head]["tuned"])},
                "gap": _panel(
                    ("gap, paper's recipe", levels[0], math.nan),
                    gap["shares"],
                    gap["remainder"],
                    ("gap, fair recipe", levels[1], math.nan),
                    labels,
                ),
            },
            output_dir / recipe["figure"],
            spec,
        )
    lines = [landing.landing_line(paper, *names[paper], found) for paper, found in parts.items()]
    markdown = [f"# {spec['title']}", ""] + [f"- {line}" for line in lines] + [""] + body
    _write_csv(pd.DataFrame(steps_rows), output_dir / "steps.csv")
    _write_csv(pd.DataFrame(pair_rows, columns=PAIR_COLUMNS), output_dir / "interactions.csv")
    with atomic_path(output_dir / "attribution.md") as tmp:
        tmp.write_text("\n".join(markdown) + "\n")
    write_json(output_dir / "landing.json", {"lines": lines})
    _write_csv(pd.DataFrame(rows), output_dir / "attribution.csv")  # last: the report's marker
    return {"lines": lines}


def _label(dataset: str) -> str:
    return datasets.get(dataset).label or dataset


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)  # every digit: a reader recomputes to 1e-9 (the Markdown rounds)
