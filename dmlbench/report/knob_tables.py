"""suite.knobs' report folder: every step's numbers (`steps.csv`), the attribution of each
recipe's gap to its knobs (`attribution.csv`, `attribution.md`), a waterfall per paper × dataset
(`waterfalls/<paper>_<dataset>.png`) and the landing page's line per paper (`landing.json`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dmlbench.data import datasets
from dmlbench.io import atomic_path, read_json, write_json
from dmlbench.knobs import attribution
from dmlbench.plots import waterfall



def _values(recipe: dict, method: dict, seeds: list[int]) -> dict[str, dict[int, float]]:
    return {step: {seed: attribution.step_value(Path(path), recipe, step) for seed, path in zip(seeds, files)}
            for step, files in method["steps"].items()}


def _tuned(path: str | None) -> tuple[float, float] | None:
    if not path or not Path(path).exists():
        return None
    value = read_json(path)["concatenated"][attribution.METRIC]
    return 100 * value["mean"], 100 * value["ci95"]


def _fmt(mean: float, low: float = math.nan, high: float = math.nan) -> str:
    return f"{mean:+.1f}" + ("" if math.isnan(low) else f" [{low:+.1f}, {high:+.1f}]")


def aggregate(spec: dict, output_dir: Path) -> dict:
    output_dir = Path(output_dir)
    (output_dir / "waterfalls").mkdir(parents=True, exist_ok=True)
    steps_rows, rows, markdown, lines = [], [], [f"# {spec['title']}", ""], {}
    per_paper: dict[str, list] = {}
    sentences: dict[str, list[str]] = {}
    for recipe in spec["recipes"]:
        labels = {k["name"]: k["label"] for k in recipe["knobs"]}
        dataset = _label(recipe["dataset"])
        results, values = {}, {}
        for name, method in recipe["methods"].items():
            values[name] = _values(recipe, method, spec["seeds"])
            results[name] = attribution.method_attribution(recipe, values[name])
            for step, per_seed in values[name].items():
                steps_rows.append({"paper": recipe["paper"], "dataset": recipe["dataset"], "method": name,
                                   "step": step, "moved": "+".join(recipe["moved"][step]) or "none",
                                   **{f"seed{s}": v for s, v in per_seed.items()},
                                   **results[name]["steps"][step]})
        head, base = recipe["headline"], recipe["baseline"]
        gap = attribution.gaps(recipe, values[head], values[base])
        per_paper.setdefault(recipe["paper"], []).append(gap)
        source = f" (the {_label(recipe['stand_in'])} recipe)" if recipe["stand_in"] else ""
        markdown += [f"## {recipe['paper']}: {recipe['methods'][head]['label']} on {dataset}{source}", "",
                     f"![waterfall]({recipe['figure']})", "",
                     f"Paper's recipe: {recipe['source']}. Recall@1 in %, changes in points with their paired "
                     f"95 % interval over seeds {spec['seeds']}; p Holm-adjusted over the recipe's knobs.", "",
                     "| method | knob | paper → fair | alone | p (Holm) | cumulative step |",
                     "|---|---|---|---|---|---|"]
        for name, result in results.items():
            cumulative = {row["knob"]: row for row in result["cumulative"]}
            for row in result["alone"]:
                knob = next(k for k in recipe["knobs"] if k["name"] == row["knob"])
                moved = "; ".join(f"{key} {knob['paper'][key]} → {knob['fair'][key]}" for key in knob["paper"])
                step = cumulative[row["knob"]]
                rows.append({"paper": recipe["paper"], "dataset": recipe["dataset"], "method": name,
                             "knob": row["knob"], "label": labels[row["knob"]], "settings": moved,
                             "alone": row["effect"], "alone_low": row["low"], "alone_high": row["high"],
                             "p_holm": row["p_holm"], "significant": row["significant"],
                             "cumulative": step["effect"], "cumulative_low": step["low"],
                             "cumulative_high": step["high"]})
                p = (row.get("untested") or "–") if math.isnan(row["p_holm"]) else \
                    f"{row['p_holm']:.3f}" + (" *" if row["significant"] else "")
                markdown.append(f"| {recipe['methods'][name]['label']} | {labels[row['knob']]} | {moved} | "
                                f"{_fmt(row['effect'], row['low'], row['high'])} | {p} | "
                                f"{_fmt(step['effect'], step['low'], step['high'])} |")
            for knob, value in (("interaction", result["interaction"]), ("total", result["total"])):
                rows.append({"paper": recipe["paper"], "dataset": recipe["dataset"], "method": name,
                             "knob": knob, "label": knob, "alone": value if knob == "interaction" else math.nan,
                             "cumulative": value if knob == "total" else math.nan})
            steps = result["steps"]
            markdown.append(f"| {recipe['methods'][name]['label']} | total (paper {steps['paper']['mean']:.1f} → "
                            f"fair {steps[result['fair_step']]['mean']:.1f}) | | interaction "
                            f"{_fmt(result['interaction'])} | | {_fmt(result['total'])} |")
        significant = [row for row in results[head]["alone"] if row["significant"]]
        sentences.setdefault(recipe["paper"], []).extend(
            f"{labels[row['knob']]} on {dataset} ({_fmt(row['effect'], row['low'], row['high'])})"
            for row in significant)
        markdown += ["", f"Gap of {recipe['methods'][head]['label']} over {recipe['methods'][base]['label']}: "
                     f"{gap['paper']:+.1f} points under the paper's recipe, {gap['fair']:+.1f} under the fair one.", ""]
        head_result = results[head]
        waterfall.draw({
            "title": f"{recipe['paper']}: {recipe['methods'][head]['label']} on {dataset}{source}",
            "paper_number": float(recipe["paper_number"]) if recipe["paper_number"] else None,
            "start": _pair(head_result["steps"]["paper"]),
            "steps": [(labels[row["knob"]], row["effect"], row["low"], row["high"]) for row in head_result["cumulative"]],
            "end": _pair(head_result["steps"][head_result["fair_step"]]),
            "tuned": _tuned(recipe["methods"][head]["tuned"]),
            "baseline": [results[base]["steps"][s]["mean"] for s in ["paper"] + recipe["cumulative"]],
            "baseline_label": recipe["methods"][base]["label"]}, output_dir / recipe["figure"], spec)
        lines[recipe["paper"]] = (recipe["methods"][head]["label"], recipe["methods"][base]["label"], labels)
    landing = [attribution.landing_line(paper, lines[paper][1], lines[paper][0], gaps, lines[paper][2])
               for paper, gaps in per_paper.items()]
    summary = [f"{paper}: knobs with a significant effect alone (Holm p < {attribution.ALPHA}): "
               + ("; ".join(found) if found else "none") for paper, found in sentences.items()]
    markdown = markdown[:2] + [f"- {line}" for line in landing + summary] + [""] + markdown[2:]
    _write_csv(pd.DataFrame(steps_rows), output_dir / "steps.csv")
    with atomic_path(output_dir / "attribution.md") as tmp:
        tmp.write_text("\n".join(markdown) + "\n")
    write_json(output_dir / "landing.json", {"lines": landing, "significant": summary})
    _write_csv(pd.DataFrame(rows), output_dir / "attribution.csv")  # last: the report's marker
    return {"lines": landing, "significant": summary}


def _label(dataset: str) -> str:
    return datasets.get(dataset).label or dataset


def _pair(step: dict) -> tuple[float, float]:
    return step["mean"], step["ci95"]


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.4f")
