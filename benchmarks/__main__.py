"""All benchmarks in one run: `python -m benchmarks [--tiny] [--out reports]`.

Writes `<out>/benchmarks.md` and `<out>/benchmarks.json` (the report index links them) and
compares each figure with its target. A benchmark prints figures; nothing here is a test.
`--tiny` runs every part on minimal sizes, only to prove the code still works (CI).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from benchmarks import budget_check, evaluation, gpu_feed, input_pipeline, losses, preflight_time, training, workflow
from dmlbench.analysis import loss_timing
from dmlbench.config.plan import Plan
from dmlbench.config.jobs import of as jobs_of


def _target(ok: bool) -> str:
    return "met" if ok else "**missed**"


def markdown(results: dict) -> str:
    lines = [
        "# dmlbench benchmarks",
        "",
        f"Machine: {results['machine']}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads. Medians unless said otherwise.",
        "",
    ]
    lines += [
        "## Loss side: suite / pytorch-metric-learning (target ≤ 1, aim 0.7)",
        "",
        "| loss | batch | d | suite ms | pml ms | ratio | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results["losses"]:
        lines.append(
            f"| {r['loss']} | {r['batch']} | {r['dim']} | {r['suite_ms']:.2f} | "
            f"{r['pml_ms']:.2f} | {r['ratio']:.2f} | {_target(r['ratio'] <= 1)} |"
        )
    lines += [
        "",
        "## DRO variants against MS and lifted structure (dro.f3 data, loss side)",
        "",
        "| method | batch | ms per iteration |",
        "|---|---|---|",
    ]
    for r in results["dro"]:
        lines.append(f"| {r['method']} | {r['batch']} | {r['mean_ms']:.1f} ± {r['std_ms']:.1f} |")
    lines += ["", "## Evaluation (targets: < 2 GB peak, ≤ AccuracyCalculator, ≤ 1.15× the matrix products)", ""]
    for size, rows in results["evaluation"].items():
        by = {r["contender"]: r for r in rows if "seconds" in r}
        lines += [
            f"### {size}",
            "",
            "| contender | seconds (fastest) | all runs, s | peak extra MiB |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r['contender']} | {r['seconds']:.2f} | {', '.join(f'{s:.1f}' for s in r['all_seconds'])} | "
            f"{r['peak_extra_mib']:.0f} |"
            for r in by.values()
        ]
        if {"suite", "suite_knn_only", "pml", "roofline"} <= set(by):
            suite, knn = by["suite"], by["suite_knn_only"]
            lines += [
                "",
                f"- peak memory {knn['peak_extra_mib']:.0f} MiB (Recall@K, MAP@R, R-Precision), "
                f"{suite['peak_extra_mib']:.0f} MiB (with NMI and F1): "
                f"{_target(max(knn['peak_extra_mib'], suite['peak_extra_mib']) < 2048)}",
                f"- suite / AccuracyCalculator (same metrics incl. k-means): "
                f"{suite['seconds'] / by['pml']['seconds']:.2f}: "
                f"{_target(suite['seconds'] <= by['pml']['seconds'])}",
                f"- Recall@K, MAP@R, R-Precision (no clustering) / matrix products: "
                f"{by['suite_knn_only']['seconds'] / by['roofline']['seconds']:.2f}: "
                f"{_target(by['suite_knn_only']['seconds'] <= 1.15 * by['roofline']['seconds'])}",
            ]
            shared = [k for k in ("recall@1", "map@r", "r_precision", "nmi") if k in by["pml"]["metrics"]]
            lines += [
                f"- {k}: suite {suite['metrics'][k]:.4f}, AccuracyCalculator {by['pml']['metrics'][k]:.4f}"
                for k in shared
            ]
        lines.append("")
    lines += [
        "## Input pipeline (targets: store ≥ 5× the cache and ≥ 10× full-size JPEGs, per worker)",
        "",
        "Images per second in steady state, 256-px store and cache, 224 crops, batches of 32. "
        "*loader*: what the workers deliver to the device (the store's batches still uint8, "
        "their crop and flip are device work); *CPU batch*: also through `device_batch` on "
        "this CPU, in the main process (what a CPU run trains on).",
        "",
        "| workers | measured at | full-size img/s | cached img/s | store img/s | store / cache | target | "
        "store / full-size | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["input_pipeline"]:
        for kind, label in (("loader", "loader"), ("cpu_batch", "CPU batch")):
            f = r[kind]
            lines.append(
                f"| {r['workers']} | {label} | {f['full_size_images_per_s']:.0f} | "
                f"{f['cached_images_per_s']:.0f} | {f['store_images_per_s']:.0f} | "
                f"{f['store_over_cache']:.1f} | {_target(f['store_over_cache'] >= 5)} | "
                f"{f['store_over_full']:.1f} | {_target(f['store_over_full'] >= 10)} |"
            )
    lines += [
        "",
        "## Cache and store steps across cores (target: images/s grows with the workers)",
        "",
        "Photo-sized JPEGs (500 × 375) → cache (shorter side 256) → store (256 × 256); SOP: the "
        "minutes both steps would take for its 120,053 images at that rate.",
        "",
        "| workers | cache img/s | per worker | store img/s | per worker | SOP, both steps |",
        "|---|---|---|---|---|---|",
    ]
    for r in results["decoding"]:
        lines.append(
            f"| {r['workers']} | {r['cache_images_per_s']:.0f} | {r['cache_per_worker']:.0f} | "
            f"{r['store_images_per_s']:.0f} | {r['store_per_worker']:.0f} | {r['sop_minutes']:.1f} min |"
        )
    w = results["workflow"]
    lines += [
        "",
        "## Workflow (target: `snakemake -n` of the full preset's paper experiments < 15 s)",
        "",
        f"- {w['what']}: {w['median_s']:.1f} s median (min {w['min_s']:.1f}, max {w['max_s']:.1f}) for "
        f"{w['jobs']} jobs: {_target(w['median_s'] < 15)}",
    ]
    if "workflow_full" in results:
        f, q = results["workflow_full"], results["workflow_full_quiet"]
        lines.append(
            f"- the whole full preset (target ≤ 20 s and ≤ 12,000 jobs): {f['median_s']:.1f} s median for "
            f"{f['jobs']} jobs ({_target(f['median_s'] <= 20)}, jobs {_target((f['jobs'] or 0) <= 12000)}); "
            f"with -q (no description of each job) {q['median_s']:.1f} s"
        )
    if "workflow_fair" in results:
        f = results["workflow_fair"]
        lines.append(
            f"- suite.fair alone (no target: a job per search round and per final repetition): "
            f"{f['median_s']:.1f} s for {f['jobs']} jobs"
        )
    if "workflow_knobs" in results:
        k = results["workflow_knobs"]
        lines.append(
            f"- suite.knobs alone (no target: every step of every path is a run): "
            f"{k['median_s']:.1f} s for {k['jobs']} jobs"
        )
    lines += [
        "",
        f"## Training step ({results['training']['gpu']})",
        "",
        "| device | backbone | px | setting | img/s |",
        "|---|---|---|---|---|",
    ]
    for r in results["training"]["rows"]:
        lines.append(f"| {r['device']} | {r['backbone']} | {r['size']} | {r['setting']} | {r['images_per_s']:.0f} |")
    g = results["gpu_feed"]
    lines += [
        "",
        f"## The GPU fed (target: end to end ≥ {gpu_feed.TARGET}× model only) — {g['device']}",
        "",
        "Each paper configuration of `full` through the training loop on a fixture via the "
        "decoded-image store (warm steps of the second epoch) against the same step on images "
        "already on the device.",
        "",
        "| experiment | backbone | px | batch | workers | end to end img/s | model only img/s | ratio | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in g["rows"]:
        lines.append(
            f"| {r['experiment']} | {r['backbone']} | {r['crop']} | {r['batch']} | {r['workers']} | "
            f"{r['end_to_end']:.0f} | {r['model_only']:.0f} | {r['ratio']:.2f} | "
            f"{_target(r['target_met']) if g['cuda'] else 'unmeasured (no GPU)'} |"
        )
    p = results["preflight"]
    lines += [
        "",
        f"## Preflight per group — {p['device']}",
        "",
        f"{p['groups']} group(s) of {p['experiments']} ({p['image_side']}): {p['seconds']:.1f} s, "
        f"{p['seconds_per_trunk_probe']:.1f} s a probe on its trunk, "
        f"{p['seconds_per_code_path_probe'] or 0:.1f} s a code path on the small trunk (all "
        f"{p['full_groups']} groups of `full`, {p['full_shapes']} network shapes, at these rates: "
        f"{p['full_minutes']:.1f} min; target on one GPU ≤ 10 min: "
        f"{_target(p['full_minutes'] <= 10) if p['cuda'] else 'unmeasured (no GPU)'}).",
    ]
    b = results["budget"]
    lines += [
        "",
        "## Compute budget against a real run (target: projection within ±15 %)",
        "",
        f"ResNet-18 at 64 px, batch 16, MS, CUB fixture ({b['test_images']} test images), {b['steps']} "
        f"steps; seconds per step from the preflight's probe ({b['warm_steps']} warm steps): "
        f"{b['seconds_per_step']:.3f} s.",
        "",
        f"- projected {b['projected_s']:.1f} s, measured {b['measured_s']:.1f} s: {b['ratio']:.2f}× — "
        f"{_target(b['within_15_percent'])}",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="minimal sizes, to prove it runs")
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    tiny = args.tiny
    results = {"machine": platform.platform(), "tiny": tiny}
    results["losses"] = [
        r
        for b in ((20,) if tiny else (80, 640))
        for d in ((32,) if tiny else (512, 1024))
        for r in losses.measure(b, d, 2 if tiny else 15)
    ]
    plan = Plan.load(Path(__file__).parents[1] / "workflow" / "config")
    dro_methods = jobs_of(plan).analysis_spec("dro.f3")["methods"]
    results["dro"] = loss_timing.measure(
        dro_methods, repeats=1 if tiny else 5, batches=(20,) if tiny else loss_timing.BATCHES
    ).to_dict("records")
    sizes = ("tiny",) if tiny else ("sop", "inshop")
    results["evaluation"] = {size: evaluation.run(size, repeats=1 if tiny else 3) for size in sizes}
    results["input_pipeline"] = input_pipeline.run(
        count=8 if tiny else 400, workers=(0,) if tiny else (1, 2), samples=16 if tiny else 1600
    )
    results["decoding"] = input_pipeline.decoding_rates(count=8 if tiny else 600, workers=(1, 2))
    # tiny: one experiment's dry run (the same code path, a tenth of the jobs)
    results["workflow"] = workflow.run(repeats=1, experiments=["ms.t1"], what="ms.t1") if tiny else workflow.run()
    if not tiny:
        results["workflow_full"] = workflow.run(repeats=3, experiments=[], what="every experiment")
        results["workflow_full_quiet"] = workflow.run(repeats=3, experiments=[], what="every experiment", quiet=True)
        results["workflow_fair"] = workflow.run(repeats=1, experiments=["suite.fair"], what="suite.fair")
        results["workflow_knobs"] = workflow.run(repeats=1, experiments=["suite.knobs"], what="suite.knobs")
    results["training"] = training.run(steps=1 if tiny else 5)
    results["gpu_feed"] = gpu_feed.run(
        steps=3 if tiny else 20, configs=gpu_feed.CONFIGS[:1] if tiny else gpu_feed.CONFIGS
    )
    results["preflight"] = preflight_time.run(cpu_side=32 if tiny else 64)
    results["budget"] = budget_check.run(
        epochs=2 if tiny else 3, batches=3 if tiny else 20, warm_steps=2 if tiny else 5
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmarks.json").write_text(json.dumps(results, indent=2, default=float) + "\n")
    (out / "benchmarks.md").write_text(markdown(results))
    print(f"wrote {out / 'benchmarks.md'}")


if __name__ == "__main__":
    main()
