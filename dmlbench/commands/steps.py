"""The pipeline's steps: data (prepare, cache, store), training and evaluation, references,
analyses, and the two process helpers (gpu-slot, warm-start)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dmlbench.commands.common import (
    CONFIG_DIR,
    CONFIG_DIR_HELP,
    max_image_pixels_option,
    positive,
    side_option,
    spec_json,
    whole,
)
from dmlbench.core.errors import DmlbenchError


def _run_config(args) -> dict:
    if args.spec:
        return {**spec_json(args.spec), **spec_json(args.side, "--side")}
    from dmlbench.config.plan import Plan

    plan = Plan.load(args.config_dir, {"preset": args.preset})
    return plan.resolve(plan.find_run(args.experiment, args.dataset, args.method, args.seed))


def cmd_ranking_vs_fair(args) -> None:
    from dmlbench.report import ranking_vs_fair

    table = ranking_vs_fair.write(spec_json(args.spec), Path(args.output_dir))
    print(f"{args.output_dir}/ranking_vs_fair.md: {len(table)} dataset × trunk rows")


def cmd_prepare(args) -> None:
    from dmlbench.data.prepare import prepare

    spec = spec_json(args.spec)
    prepare(
        spec["dataset"],
        spec["source"],
        Path(spec["root"]),
        Path(args.output),
        user_path=spec.get("path"),
        allow_download=spec.get("download", True),
        fixture_size=spec.get("fixture"),
        csv_sha256=spec.get("csv_sha256"),
    )


def cmd_cache(args) -> None:
    from dmlbench.data import cache, parallel

    args.workers = args.workers or parallel.default_workers()
    cache.build(
        Path(args.manifest), Path(args.output), args.size, workers=args.workers, max_pixels=args.max_image_pixels
    )


def cmd_store(args) -> None:
    from dmlbench.data import parallel, store

    args.workers = args.workers or parallel.default_workers()
    store.build(
        Path(args.manifest), Path(args.output), args.side, workers=args.workers, max_pixels=args.max_image_pixels
    )


def cmd_link_run(args) -> None:
    from dmlbench.training import run_link

    run_link.link(Path(args.metrics).parent, Path(args.trained).parent)


def cmd_train(args) -> None:
    cfg = _run_config(args)
    if args.run_dir is None:
        if not args.metrics:
            raise DmlbenchError("train: name the run folder (--run-dir) or the metrics file in it (--metrics)")
        args.run_dir = str(Path(args.metrics).parent)
    train_run(cfg, Path(args.run_dir), Path(args.metrics) if args.metrics else None)


def train_run(cfg: dict, run_dir: Path, metrics: Path | None) -> None:
    """Train a run (resuming its checkpoint) and write its `metrics.json` from the model's final
    evaluation; nothing to train where the folder holds a model of these settings."""
    from dmlbench.evaluation import final_metrics
    from dmlbench.training import run_folder, train

    if metrics and run_folder.trained_with(run_dir, cfg) and final_metrics.reuse(run_dir, metrics):
        return  # trained before with these settings (its metrics.json lost or set aside): nothing to train
    train.train(cfg, run_dir, log=train.log_stderr)
    if metrics and not final_metrics.reuse(run_dir, metrics):  # the train step's own evaluation
        raise DmlbenchError(f"{run_dir}: no final evaluation of its model.pt to write to {metrics}")


def cmd_evaluate(args) -> None:
    from dmlbench.evaluation import final_metrics

    if not args.fresh and final_metrics.reuse(Path(args.run_dir), Path(args.output)):
        return  # the train step's evaluation of this very model.pt: no torch start needed
    from dmlbench.evaluation import evaluate_run

    evaluate_run.evaluate(Path(args.run_dir), Path(args.output))


def cmd_reference(args) -> None:
    from dmlbench.evaluation import reference

    reference.run({**spec_json(args.spec), **spec_json(args.side, "--side")}, Path(args.output))


def cmd_analyse(args) -> None:
    from dmlbench import analysis

    spec = spec_json(args.spec)
    analysis.run(spec["analysis"], Path(args.output_dir), spec)


def cmd_retrieved(args) -> None:
    from dmlbench.report import retrieved

    retrieved.run(spec_json(args.spec), Path(args.json), Path(args.figure))


def cmd_gpu_slot(args) -> None:
    from dmlbench.orchestration.gpu_slots import run_on_free_device

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise DmlbenchError("gpu-slot needs a command after --")
    if args.per_device < 1:
        raise DmlbenchError("gpu-slot --per-device 0: give 1 or more (jobs one device runs at once)")
    sys.exit(run_on_free_device(command, args.slots, Path(args.lock_dir), args.timeout, args.per_device))


def cmd_warm_start(args) -> None:
    from dmlbench.orchestration import warm_server

    warm_server.serve(Path(args.socket), args.owner, args.command_line)


def add(sub) -> None:
    """Add these commands to the command line's subparsers."""
    s = sub.add_parser("prepare", help="acquire, parse and check a dataset; write its manifest")
    s.add_argument("--spec", required=True, help="JSON: dataset, source, root, path, download, fixture")
    s.add_argument("--output", required=True, help="the manifest.csv to write")
    s.set_defaults(func=cmd_prepare)

    s = sub.add_parser("cache", help="pre-resize the images of a manifest")
    s.add_argument("--manifest", required=True, help="the dataset's manifest.csv")
    s.add_argument("--size", type=positive, required=True, help="shorter side in pixels")
    s.add_argument("--workers", type=int, default=None, help="processes decoding images (default: every core)")
    s.add_argument("--output", required=True, help="the cache folder to write")
    max_image_pixels_option(s)
    s.set_defaults(func=cmd_cache)

    s = sub.add_parser("store", help="decode a manifest's images once into a memory-mapped array")
    s.add_argument("--manifest", required=True, help="the dataset's manifest.csv (or its cache's)")
    s.add_argument("--side", type=positive, required=True, help="images are resized to side × side")
    s.add_argument("--workers", type=int, default=None, help="processes decoding images (default: every core)")
    s.add_argument("--output", required=True, help="the store folder")
    max_image_pixels_option(s)
    s.set_defaults(func=cmd_store)

    s = sub.add_parser("train", help="train one run (resumes from its last checkpoint)")
    s.add_argument("--run-dir", help="the run folder (default: the folder of --metrics)")
    s.add_argument("--spec", help="resolved run config as JSON (what the workflow passes)")
    side_option(s)
    s.add_argument("--metrics", help="also write the final model's metrics here (metrics.json)")
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument("--preset", default="full", help="the preset whose run to train, without --spec (default: full)")
    s.add_argument("--experiment", help="the run's experiment id, without --spec")
    s.add_argument("--dataset", help="the run's dataset, without --spec")
    s.add_argument("--method", help="the run's method id, without --spec")
    s.add_argument("--seed", type=int, default=0, help="the run's seed, without --spec (default: 0)")
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("link-run", help="make a run folder a link to the earlier run it is the same training as")
    s.add_argument("--trained", required=True, help="metrics.json of the run that trained it")
    s.add_argument("--metrics", required=True, help="metrics.json of the run folder to make a link")
    s.set_defaults(func=cmd_link_run)

    s = sub.add_parser("evaluate", help="embed the test split of a trained run and compute metrics")
    s.add_argument("--run-dir", required=True, help="the trained run's folder (with its model.pt)")
    s.add_argument("--output", required=True, help="the metrics.json to write")
    s.add_argument(
        "--fresh", action="store_true", help="evaluate model.pt again even where the train step kept its evaluation"
    )
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser(
        "reference",
        help="evaluate the embeddings before any training step (network at initialisation, trunk features, raw pixels)",
    )
    s.add_argument("--spec", required=True, help="JSON: what Jobs.reference_spec gives")
    side_option(s)
    s.add_argument("--output", required=True, help="the metrics.json of the reference row to write")
    s.set_defaults(func=cmd_reference)

    s = sub.add_parser("analyse", help="compute a CPU-exact figure (kind: analysis experiments)")
    s.add_argument("--spec", required=True, help="JSON: what Jobs.analysis_spec gives")
    s.add_argument("--output-dir", required=True, help="the experiment's report folder")
    s.set_defaults(func=cmd_analyse)

    s = sub.add_parser("ranking-vs-fair", help="a trunk ranking's Kendall τ against the fair table's ranking")
    s.add_argument("--spec", required=True, help="JSON: what Jobs.ranking_vs_fair_spec gives")
    s.add_argument("--output-dir", required=True, help="the experiment's report folder")
    s.set_defaults(func=cmd_ranking_vs_fair)

    s = sub.add_parser(
        "retrieved", help="the top-k gallery images of fixed queries under two finished runs (JSON and figure)"
    )
    s.add_argument("--spec", required=True, help="JSON: what Jobs.retrieved_spec gives")
    s.add_argument("--json", required=True, help="the record to write (queries, neighbours, correct flags, runs)")
    s.add_argument("--figure", required=True, help="the PNG to write")
    s.set_defaults(func=cmd_retrieved)

    s = sub.add_parser("gpu-slot", help="run a command on a device no other such command holds")
    s.add_argument("--slots", type=whole, required=True, help="number of devices (0: leave as is)")
    s.add_argument("--per-device", type=whole, default=1, help="jobs one device runs at once (the slots' share)")
    s.add_argument("--lock-dir", default=".dmlbench/gpu-locks", help="where the slots' lock files live")
    s.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for a free device before giving up (default: no limit)",
    )
    s.add_argument("command", nargs=argparse.REMAINDER, help="the command to run on the free GPU (after --)")
    s.set_defaults(func=cmd_gpu_slot)

    s = sub.add_parser(
        "warm-start",
        help="fork training steps from one process that has imported torch (started by the workflow on CPU presets)",
    )
    s.add_argument("--socket", required=True, help="path of the Unix socket to listen on")
    s.add_argument("--owner", type=int, required=True, help="pid of the Snakemake process: end with it")
    s.set_defaults(func=cmd_warm_start)
