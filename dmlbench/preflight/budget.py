"""The compute budget of a plan, projected from the seconds per step measured by the preflight.

For a run r of group g on the real dataset:

  steps(r)   = epochs × batches per epoch (batches_per_epoch, or the sampler's epoch on the real
               training split: ⌊N / B⌋; category pairs: C(S, 2) × per_pair; VehicleID ≈ 2N / B)
  evals(r)   = 1 + ⌈epochs / every⌉ (per-epoch evaluations, then the final one; 1 without)
  (a fold training of the fair protocol evaluates its validation fold, N / folds images, and a
  final one, like suite.knobs' runs on folds, also embeds the test half once; its epochs are the
  most it may train: the budget is an upper bound, since early stopping ends most folds sooner)
  time(r)    = (steps(r) + probe steps) × t_step(g) + (evals(r) × test images
               + scatter epochs × training images) × t_image(g)

t_step and t_image (evaluation seconds per image) are measured on this device; measured at a
smaller image side, they are scaled by the ratio of pixels (real crop² / measured crop²).
Device-hours = Σ time(r); wall time on N devices = the longest-first greedy schedule of the runs
on N devices (each run on one device), never less than Σ time / N nor the longest run.

The workflow's GPU jobs group the runs (`Plan.gpu_jobs`: a training, a fair search round of
`parallel` trials × folds, a final repetition's folds): a job's time is the sum of its runs', and a
fair search's rounds run one after another, then its repetitions side by side. The wall-clock
lower bound on N devices is the larger of Σ time / N and the longest such chain.
"""

from __future__ import annotations

import heapq
import math

from dmlbench.data import datasets
from dmlbench.run_config import RunConfig
from dmlbench.training.projection import steps_per_epoch


def evaluations(cfg: RunConfig) -> int:
    every = cfg.eval.every
    return 1 + (math.ceil(cfg.epochs / every) if every else 0)


def run_seconds(cfg: RunConfig, dataset: str, seconds_per_step: float, seconds_per_image: float) -> float:
    expected = datasets.get(dataset).expected.images
    test_images = sum(n for split, n in expected.items() if split != "train")
    probe = cfg.record.probe
    steps = cfg.epochs * steps_per_epoch(cfg, dataset) + len(probe.epochs) * probe.steps
    fold = cfg.data.get("fold")
    if fold:  # each epoch's evaluation is of the validation fold (or the test half: suite.knobs keeping a
        # paper's test-set choice of epoch); all but the fair search's folds embed the test half
        per_epoch = test_images if fold.get("epochs_scored_on") == "test_half" else expected["train"] / fold["of"]
        evaluated = evaluations(cfg) * per_epoch
        evaluated += test_images if cfg.run.get("stage") != "search" else 0
    else:
        evaluated = evaluations(cfg) * test_images
    images = evaluated + len(cfg.record.scatter_epochs) * expected["train"]
    return steps * seconds_per_step + images * seconds_per_image


def wall_seconds(durations: list[float], devices: int) -> float:
    """Longest-first greedy schedule of independent runs on `devices` devices: its makespan."""
    loads = [0.0] * max(1, devices)
    for duration in sorted(durations, reverse=True):
        heapq.heapreplace(loads, loads[0] + duration)
    return max(loads)


def cluster_jobs(jobs: list[dict], hours: dict[str, float]) -> tuple[list[float], float]:
    """The hours of each GPU job whose runs are all projected, and the longest fair search chain
    (its rounds in turn, then its longest repetition)."""
    lengths, rounds, repetitions = [], {}, {}
    for job in jobs:
        if not all(run in hours for run in job["runs"]):
            continue
        length = sum(hours[run] for run in job["runs"])
        lengths.append(length)
        if job["chain"] is not None:
            key = job["chain"]
            if job["stage"] == "search":
                rounds[key] = rounds.get(key, 0.0) + length
            else:
                repetitions[key] = max(repetitions.get(key, 0.0), length)
    chains = [rounds.get(k, 0.0) + repetitions.get(k, 0.0) for k in set(rounds) | set(repetitions)]
    return lengths, max(chains, default=0.0)


def wall_lower_bound(lengths: list[float], longest_chain: float, devices: int) -> float:
    """No schedule on `devices` devices ends sooner: the work shared out, or the longest chain."""
    return max(sum(lengths) / max(1, devices), longest_chain, max(lengths, default=0.0))


def cluster_summary(jobs: list[dict], hours: dict[str, float], devices: int) -> str:
    """The workflow's GPU jobs in one paragraph: how many, how long, and the wall clock no schedule beats."""
    lengths, chain = cluster_jobs(jobs, hours)
    if not lengths:
        return ""
    ordered = sorted(lengths)
    median, top = ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    bound = wall_lower_bound(lengths, chain, devices)
    return (
        f"**Cluster jobs** (one GPU each, `Plan.gpu_jobs`): {len(lengths)} of {len(jobs)} projected; hours per "
        f"job: min {ordered[0]:.2f}, median {median:.2f}, 90th percentile {top:.2f}, max {ordered[-1]:.2f}. "
        f"Wall-clock lower bound on {devices} devices: {bound:.1f} h (device-hours / devices, or the longest "
        f"fair search: its rounds in turn, then its longest repetition, {chain:.1f} h). Each job asks SLURM "
        f"for its hours × DMLBENCH_SLURM_TIME_FACTOR (docs/slurm.md)."
    )
