"""What `suite.knobs` costs at `full`: `python -m benchmarks.knob_cost [--stop EPOCHS] [--results DIR]`.

Per trunk and input side: its runs, the training images they see (epochs × batches per epoch ×
batch, `dmlbench.training.projection.steps_per_epoch`; a run on folds trains on three of its four
folds), a run with early stopping counted at its stop, and, as an upper bound, at its cap; then
GPU-hours at the training throughput measured on one H100 (`dmlbench.training.projection`:
BN-Inception at 227 pixels 1,279 images/s, ResNet-50 at 256 pixels 628 images/s; GoogLeNet,
unmeasured, at BN-Inception's rate), scaled by pixels to each input side; and the share of the
backward path (the runs of steps no other path has: each knob reverted from the fair recipe).

The stop: where finished runs exist under `--results` (their `epochs.jsonl` beside a
`metrics.json`), the mean epoch at which the finished runs of the same method and dataset
stopped, said as measured; else `--stop` (default 100), an assumption, with the totals at stops
of 30, 100, 300 and 400 epochs printed beside it so that the range is stated. Training steps
only: the per-epoch evaluation and the final test embedding come on top. A projection from the
plan's settings; it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from dmlbench.config.plan import Plan
from dmlbench.training.projection import images_per_second, steps_per_epoch
from dmlbench.run_config import RunConfig

CONFIG_DIR = Path(__file__).resolve().parents[1] / "workflow" / "config"
GPUS = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop", type=int, default=100, help="the mean epoch at which early stopping ends a run")
    parser.add_argument("--results", type=Path, default=Path("."), help="the checkout whose results/full to read")
    args = parser.parse_args()
    plan = Plan.load(CONFIG_DIR, {"preset": "full", "experiments": ["suite.knobs"]})
    measured = _measured_stops(plan, args.results)
    print(
        f"measured stops: {sum(len(v) for v in measured.values())} finished early-stopped runs "
        f"({len(measured)} method × dataset pairs); the others at the assumed stop"
    )
    for stop in (30, 100, 300, 400):
        print(f"- at an assumed stop of {stop} epochs: {_total(plan, stop, measured):,.0f} GPU-hours")
    runs, at_stop, at_cap = defaultdict(int), defaultdict(float), defaultdict(float)
    backward = [0, 0.0]  # runs and GPU-hours at the stop of the backward path's own steps
    index = plan.knob_run_index("suite.knobs")
    for run in plan.runs("suite.knobs"):
        cfg = RunConfig.from_dict(plan.resolve(run))
        images = steps_per_epoch(cfg, run.dataset) * cfg.batch.size
        key = (cfg.model.backbone, cfg.input.crop)
        runs[key] += 1
        at_cap[key] += cfg.epochs * images
        seen = _epochs(cfg, run, args.stop, measured) * images
        at_stop[key] += seen
        if _backward_only(index[run]):
            backward[0] += 1
            backward[1] += seen / images_per_second(cfg.model.backbone, cfg.input.crop) / 3600
    print(
        f"suite.knobs at full: {sum(runs.values()):,} runs; early-stopped runs counted at epoch {args.stop} "
        f"(and at their cap)"
    )
    print("| trunk | side | runs | training images (M) | GPU-hours | at the cap (M images / GPU-hours) |")
    print("|---|---|---:|---:|---:|---:|")
    totals = [0.0, 0.0]
    for (backbone, side), count in sorted(runs.items()):
        rate = images_per_second(backbone, side)
        hours, cap_hours = at_stop[(backbone, side)] / rate / 3600, at_cap[(backbone, side)] / rate / 3600
        totals[0] += hours
        totals[1] += cap_hours
        print(
            f"| {backbone} | {side} | {count} | {at_stop[(backbone, side)] / 1e6:,.0f} | {hours:,.0f} | "
            f"{at_cap[(backbone, side)] / 1e6:,.0f} / {cap_hours:,.0f} |"
        )
    print(
        f"total: {totals[0]:,.0f} GPU-hours ({totals[0] / GPUS / 24:.1f} days on {GPUS} GPUs); "
        f"at every cap {totals[1]:,.0f} GPU-hours ({totals[1] / GPUS / 24:.1f} days)"
    )
    print(
        f"of which the backward path's own steps: {backward[0]:,} runs, {backward[1]:,.0f} GPU-hours "
        f"({backward[1] / GPUS / 24:.1f} days on {GPUS} GPUs)"
    )


def _backward_only(info) -> bool:
    """Whether a run's step is on the backward path alone (no cumulative or forward step is it)."""
    paths = info.path.paths
    others = {s.moved for s in paths.cumulative} | {s.moved for pair in paths.alone.values() for s in pair}
    return info.step.moved not in others


def _epochs(cfg: RunConfig, run, stop: int, measured: dict) -> float:
    """The epochs a run trains: all of them without early stopping, else its method and dataset's
    measured mean stop where finished runs give one, else `stop` (at most the cap)."""
    if not cfg.early_stopping.patience:
        return cfg.epochs
    found = measured.get((run.base_method, run.dataset))
    return min(cfg.epochs, sum(found) / len(found) if found else stop)


def _measured_stops(plan, root: Path) -> dict:
    """(method, dataset) → the epochs each finished early-stopped run of `full` trained."""
    found: dict = defaultdict(list)
    for run in plan.runs("suite.knobs"):
        folder = root / run.path("full")
        if (folder / "metrics.json").exists() and (folder / "epochs.jsonl").exists():
            if RunConfig.from_dict(plan.resolve(run)).early_stopping.patience:
                epochs = sum(1 for line in (folder / "epochs.jsonl").read_text().splitlines() if line.strip())
                found[run.base_method, run.dataset].append(epochs)
    return dict(found)


def _total(plan, stop: int, measured: dict) -> float:
    """GPU-hours of the whole experiment at an assumed stop (measured stops where there are any)."""
    hours = 0.0
    for run in plan.runs("suite.knobs"):
        cfg = RunConfig.from_dict(plan.resolve(run))
        images = steps_per_epoch(cfg, run.dataset) * cfg.batch.size * _epochs(cfg, run, stop, measured)
        hours += images / images_per_second(cfg.model.backbone, cfg.input.crop) / 3600
    return hours


if __name__ == "__main__":
    main()
