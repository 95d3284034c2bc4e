"""Command line: `python -m dmlbench <step> …`, one subcommand per workflow step.

Every step can be run by hand; the Snakemake rules call exactly these commands.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dmlbench.errors import DmlbenchError, explain_os_error

CONFIG_DIR = "workflow/config"


def _spec(text: str) -> dict:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DmlbenchError(f"--spec is not valid JSON: {error}") from None


def cmd_prepare(args) -> None:
    from dmlbench.data.prepare import prepare

    spec = _spec(args.spec)
    prepare(spec["dataset"], spec["source"], Path(spec["root"]), Path(args.output),
            user_path=spec.get("path"), allow_download=spec.get("download", True),
            fixture_size=spec.get("fixture"))


def cmd_cache(args) -> None:
    from dmlbench.data import cache, parallel

    args.workers = args.workers or parallel.default_workers()
    cache.build(Path(args.manifest), Path(args.output), args.size, workers=args.workers,
                max_pixels=args.max_image_pixels)


def _run_config(args) -> dict:
    if args.spec:
        return _spec(args.spec)
    from dmlbench.config.plan import Plan

    plan = Plan.load(args.config_dir, {"preset": args.preset})
    return plan.resolve(plan.find_run(args.experiment, args.dataset, args.method, args.seed))


def cmd_train(args) -> None:
    from dmlbench.training import train

    cfg = _run_config(args)
    train.train(cfg, Path(args.run_dir), log=train.log_stderr)


def cmd_evaluate(args) -> None:
    from dmlbench.evaluation import final_metrics

    if not args.fresh and final_metrics.reuse(Path(args.run_dir), Path(args.output)):
        return  # the train step's evaluation of this very model.pt: no torch start needed
    from dmlbench.evaluation import evaluate_run

    evaluate_run.evaluate(Path(args.run_dir), Path(args.output))


def cmd_aggregate(args) -> None:
    from dmlbench.report import aggregate

    aggregate.aggregate(_spec(args.spec), [Path(p) for p in args.metrics], Path(args.output_dir),
                        [Path(p) for p in args.references])


def cmd_reference(args) -> None:
    from dmlbench.evaluation import reference

    reference.run(_spec(args.spec), Path(args.output))


def cmd_analyse(args) -> None:
    from dmlbench import analysis

    spec = _spec(args.spec)
    analysis.run(spec["analysis"], Path(args.output_dir), spec)


def cmd_report(args) -> None:
    from dmlbench.config.plan import Plan
    from dmlbench.report import index

    index.write(Plan.load(args.config_dir, _spec(args.config)), Path(args.output))


def cmd_results_table(args) -> None:
    from dmlbench.config.plan import Plan
    from dmlbench.report import results_table

    table = results_table.build(Plan.load(args.config_dir, _spec(args.config)), Path(args.output))
    print(f"{args.output}: {len(table)} rows", file=sys.stderr)


def cmd_results(args) -> None:
    from dmlbench.report import results_table

    table = Path(args.table or f"results/{args.preset}/runs.parquet")
    answer = results_table.query(table, args.sql)
    print(answer.to_csv(index=False) if args.csv else answer.to_string(index=False, max_rows=args.max_rows))


def cmd_verdict(args) -> None:
    from dmlbench.config import verdict_spec
    from dmlbench.config.plan import Plan
    from dmlbench.io import atomic_path, write_json
    from dmlbench.report.provenance import commit
    from dmlbench.verdicts import certificate

    config = dict(_spec(args.config), **({"preset": args.preset} if args.preset else {}))
    plan = Plan.load(args.config_dir, config)
    paper = verdict_spec.paper_of(plan, args.name)
    cert = certificate.build(verdict_spec.certificate_spec(plan, paper), commit())
    text = certificate.markdown(cert)
    if args.output_dir:
        folder = Path(args.output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / "certificate.json", cert)
        with atomic_path(folder / "certificate.md") as tmp:
            tmp.write_text(text)
    print(certificate.markdown(cert, only=args.name if args.name in plan.experiments else None), end="")


def cmd_plan(args) -> None:
    from dmlbench.config.plan import Plan

    plan = Plan.load(args.config_dir, {"preset": args.preset})
    for run in plan.runs():
        print(run.path(plan.name))


def cmd_doctor(args) -> None:
    from dmlbench import doctor
    from dmlbench.config.plan import Plan

    config = dict(_spec(args.config), **({"preset": args.preset} if args.preset else {}))
    checks = doctor.run(Plan.load(args.config_dir, config), slurm=args.slurm, timeout=args.timeout)
    print(doctor.table(checks))
    if any(c.status == doctor.ACTION for c in checks):
        sys.exit(1)


def cmd_store(args) -> None:
    from dmlbench.data import parallel, store

    args.workers = args.workers or parallel.default_workers()
    store.build(Path(args.manifest), Path(args.output), args.side, workers=args.workers,
                max_pixels=args.max_image_pixels)


def cmd_preflight(args) -> None:
    from dmlbench.config.plan import Plan
    from dmlbench.preflight import runner

    config = dict(_spec(args.config), **({"preset": args.preset} if args.preset else {}))
    plan = Plan.load(args.config_dir, config)
    output = Path(args.output_dir or f"reports/{plan.name}/preflight")
    passed = runner.run(plan, Path(args.workdir), output, args.image_side, args.device, args.devices,
                        only_bounded=args.bounded, jobs=args.jobs, warm_steps=args.warm_steps,
                        log=lambda m: print(m, file=sys.stderr, flush=True))
    if not passed:
        sys.exit(1)


def cmd_fair_splits(args) -> None:
    from dmlbench.data import folds

    folds.write(Path(args.manifest), Path(args.output), args.folds)


def cmd_fair_ask(args) -> None:
    from dmlbench.fair import study

    asked = study.ask(_spec(args.spec), Path(args.output))
    print(f"trial {asked['trial']} (slot {asked['slot']}): {asked['params']}", file=sys.stderr)


def cmd_fair_train(args) -> None:
    from dmlbench.fair import fold_run

    fold_run.run(_spec(args.spec), Path(args.params), Path(args.run_dir), Path(args.output),
                 Path(args.test_output) if args.test_output else None)


def cmd_fair_tell(args) -> None:
    from dmlbench.fair import study

    told = study.tell(_spec(args.spec), Path(args.params), [Path(p) for p in args.folds], Path(args.output))
    print(f"trial {told['trial']}: objective {told['objective']}", file=sys.stderr)


def cmd_fair_best(args) -> None:
    from dmlbench.fair import study

    chosen = study.best([Path(p) for p in args.results], Path(args.output), Path(args.trials))
    print(f"best trial {chosen['trial']}: {chosen['params']} (validation MAP@R {chosen['objective']:.4f})",
          file=sys.stderr)


def cmd_fair_summary(args) -> None:
    from dmlbench.fair import summary

    spec = _spec(args.spec)
    files = [Path(p) for p in args.embeddings]
    folds = spec["folds"]
    summary.summarise(spec, [files[r * folds:(r + 1) * folds] for r in range(spec["repetitions"])],
                      Path(args.output))


def cmd_fair_aggregate(args) -> None:
    from dmlbench.report import fair_tables

    fair_tables.aggregate(_spec(args.spec), Path(args.output_dir))


def cmd_gpu_slot(args) -> None:
    from dmlbench.gpu_slots import run_on_free_device

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise DmlbenchError("gpu-slot needs a command after --")
    sys.exit(run_on_free_device(command, args.slots, Path(args.lock_dir), args.timeout))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 1")
    return value


def _max_image_pixels_option(s) -> None:
    s.add_argument("--max-image-pixels", type=_positive, default=None,
                   help="refuse images of more pixels (data.max_image_pixels; default: PIL's limit)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dmlbench", description=__doc__)
    sub = p.add_subparsers(dest="step", required=True)

    s = sub.add_parser("prepare", help="acquire, parse and check a dataset; write its manifest")
    s.add_argument("--spec", required=True, help="JSON: dataset, source, root, path, download, fixture")
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_prepare)

    s = sub.add_parser("cache", help="pre-resize the images of a manifest")
    s.add_argument("--manifest", required=True)
    s.add_argument("--size", type=_positive, required=True, help="shorter side in pixels")
    s.add_argument("--workers", type=int, default=None, help="processes decoding images (default: every core)")
    s.add_argument("--output", required=True)
    _max_image_pixels_option(s)
    s.set_defaults(func=cmd_cache)

    s = sub.add_parser("train", help="train one run (resumes from its last checkpoint)")
    s.add_argument("--run-dir", required=True)
    s.add_argument("--spec", help="resolved run config as JSON (what the workflow passes)")
    s.add_argument("--config-dir", default=CONFIG_DIR)
    s.add_argument("--preset", default="full")
    s.add_argument("--experiment")
    s.add_argument("--dataset")
    s.add_argument("--method")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("evaluate", help="embed the test split of a trained run and compute metrics")
    s.add_argument("--run-dir", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--fresh", action="store_true",
                   help="evaluate model.pt again even where the train step kept its evaluation")
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("aggregate", help="one experiment's runs → tables (CSV, Markdown) and figures")
    s.add_argument("--spec", required=True)
    s.add_argument("--metrics", nargs="+", required=True)
    s.add_argument("--references", nargs="*", default=[],
                   help="metrics.json of the reference jobs (embeddings before training)")
    s.add_argument("--output-dir", required=True)
    s.set_defaults(func=cmd_aggregate)

    s = sub.add_parser("reference", help="evaluate the embeddings before any training step "
                                         "(network at initialisation, trunk features, raw pixels)")
    s.add_argument("--spec", required=True, help="JSON: what Plan.reference_spec gives")
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_reference)

    s = sub.add_parser("analyse", help="compute a CPU-exact figure (kind: analysis experiments)")
    s.add_argument("--spec", required=True)
    s.add_argument("--output-dir", required=True)
    s.set_defaults(func=cmd_analyse)

    s = sub.add_parser("report", help="write the HTML report of a preset (contents, tables, figures)")
    s.add_argument("--config-dir", default=CONFIG_DIR)
    s.add_argument("--config", default="{}", help="JSON: the workflow's config (preset and changes)")
    s.add_argument("--output", required=True, help="reports/<preset>/index.html")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("results-table", help="every run's metrics, config fingerprint, commit and cost in one "
                                             "table: results/<preset>/runs.parquet")
    s.add_argument("--config-dir", default=CONFIG_DIR)
    s.add_argument("--config", default="{}", help="JSON: the workflow's config (preset and changes)")
    s.add_argument("--output", required=True, help="results/<preset>/runs.parquet")
    s.set_defaults(func=cmd_results_table)

    s = sub.add_parser("results", help="SQL over the results table (DuckDB; the table is named runs)")
    s.add_argument("sql", help="e.g. \"SELECT method, avg(value) FROM runs WHERE metric = 'map@r' GROUP BY method\"")
    s.add_argument("--preset", default="demo", help="reads results/<preset>/runs.parquet (default: demo)")
    s.add_argument("--table", help="another runs.parquet")
    s.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
    s.add_argument("--max-rows", type=int, default=200)
    s.set_defaults(func=cmd_results)

    s = sub.add_parser("verdict", help="a paper's certificate from the finished results: every paper "
                                       "number's verdict and every claim's test (no training)")
    s.add_argument("name", help="a paper (ms) or one of its experiments (ms.t1)")
    s.add_argument("--config-dir", default=CONFIG_DIR)
    s.add_argument("--preset", help="preset name (default: full, or the one in --config)")
    s.add_argument("--config", default="{}", help="JSON: changes as in --config of the workflow")
    s.add_argument("--output-dir", help="also write certificate.md and certificate.json here "
                                        "(the pipeline: reports/<preset>/<paper>)")
    s.set_defaults(func=cmd_verdict)

    s = sub.add_parser("plan", help="list the run folders a preset expands into")
    s.add_argument("--config-dir", default=CONFIG_DIR)
    s.add_argument("--preset", default="full")
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("doctor", help="what this machine has and lacks for a plan (no training)")
    s.add_argument("--config-dir", default=CONFIG_DIR)
    s.add_argument("--preset", help="preset name (default: full, or the one in --config)")
    s.add_argument("--config", default="{}", help="JSON: changes as in --config of the workflow")
    s.add_argument("--slurm", action="store_true", help="also check the SLURM executor plugin")
    s.add_argument("--timeout", type=float, default=5.0, help="seconds per source probe")
    s.set_defaults(func=cmd_doctor)

    s = sub.add_parser("store", help="decode a manifest's images once into a memory-mapped array")
    s.add_argument("--manifest", required=True)
    s.add_argument("--side", type=_positive, required=True, help="images are resized to side × side")
    s.add_argument("--workers", type=int, default=None, help="processes decoding images (default: every core)")
    s.add_argument("--output", required=True, help="the store folder")
    _max_image_pixels_option(s)
    s.set_defaults(func=cmd_store)

    s = sub.add_parser("preflight", help="run every code path of a plan once on fixtures; project its compute budget")
    s.add_argument("--config-dir", default=CONFIG_DIR)
    s.add_argument("--preset", help="preset name (default: full, or the one in --config)")
    s.add_argument("--config", default="{}", help="JSON: changes as in --config of the workflow")
    s.add_argument("--image-side", type=int, default=None,
                   help="crop side in pixels for the probes (CPU); batch, method and network unchanged")
    s.add_argument("--device", default="auto", help="auto | cpu | cuda")
    s.add_argument("--devices", type=int, default=8, help="devices for the wall-time projection")
    s.add_argument("--bounded", action="store_true",
                   help="only a part covering every paper, backbone, loss, miner, sampler and scheme")
    s.add_argument("--warm-steps", type=int, default=None,
                   help="steps timed after a first one, per group (default: 5 on a GPU, 0 on a CPU)")
    s.add_argument("--jobs", type=int, default=None,
                   help="probes at a time (default: 1 on a GPU, one per two CPU cores)")
    s.add_argument("--workdir", default="data/preflight", help="fixtures and scratch run folders")
    s.add_argument("--output-dir", default=None, help="default: reports/<preset>/preflight")
    s.set_defaults(func=cmd_preflight)

    s = sub.add_parser("fair-splits", help="cut a manifest's training classes into class-disjoint folds")
    s.add_argument("--manifest", required=True)
    s.add_argument("--folds", type=int, required=True)
    s.add_argument("--output", required=True, help="the split file (path, label, part)")
    s.set_defaults(func=cmd_fair_splits)

    s = sub.add_parser("fair-ask", help="the parameters of one trial slot of a method's search")
    s.add_argument("--spec", required=True, help="JSON: what Plan.fair_ask_spec gives")
    s.add_argument("--output", required=True, help="params.json")
    s.set_defaults(func=cmd_fair_ask)

    s = sub.add_parser("fair-train", help="train one fold with given parameters, select on its validation fold")
    s.add_argument("--spec", required=True, help="JSON: what Plan.fair_run_spec gives")
    s.add_argument("--params", required=True, help="params.json of a trial, or best.json")
    s.add_argument("--run-dir", required=True)
    s.add_argument("--output", required=True, help="validation.json")
    s.add_argument("--test-output", help="test.npz: the test half's embeddings (final runs only)")
    s.set_defaults(func=cmd_fair_train)

    s = sub.add_parser("fair-tell", help="record a trial's mean validation MAP@R over its folds")
    s.add_argument("--spec", required=True, help="JSON: what Plan.fair_ask_spec gives")
    s.add_argument("--params", required=True)
    s.add_argument("--folds", nargs="+", required=True, help="the folds' validation.json")
    s.add_argument("--output", required=True, help="result.json")
    s.set_defaults(func=cmd_fair_tell)

    s = sub.add_parser("fair-best", help="the best trial of a search, and trials.csv")
    s.add_argument("--results", nargs="+", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--trials", required=True)
    s.set_defaults(func=cmd_fair_best)

    s = sub.add_parser("fair-summary", help="test metrics separated and concatenated, mean and 95 %% interval")
    s.add_argument("--spec", required=True)
    s.add_argument("--embeddings", nargs="+", required=True, help="test.npz, repetition by repetition")
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_fair_summary)

    s = sub.add_parser("fair-aggregate", help="the fair tables, figure and paper-vs-fair table")
    s.add_argument("--spec", required=True)
    s.add_argument("--output-dir", required=True)
    s.set_defaults(func=cmd_fair_aggregate)

    s = sub.add_parser("gpu-slot", help="run a command on a device no other such command holds")
    s.add_argument("--slots", type=int, required=True, help="number of devices (0: leave as is)")
    s.add_argument("--lock-dir", default=".dmlbench/gpu-locks")
    s.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for a free device before giving up (default: no limit)")
    s.add_argument("command", nargs=argparse.REMAINDER)
    s.set_defaults(func=cmd_gpu_slot)

    s = sub.add_parser("warm-start", help="fork training steps from one process that has imported torch "
                                          "(started by the workflow on CPU presets)")
    s.add_argument("--socket", required=True, help="path of the Unix socket to listen on")
    s.add_argument("--owner", type=int, required=True, help="pid of the Snakemake process: end with it")
    s.set_defaults(func=cmd_warm_start)
    return p


def _out_of_memory(error: BaseException) -> bool:
    """Python's, CUDA's (torch.OutOfMemoryError) or torch's CPU allocator's."""
    torch = sys.modules.get("torch")
    return (isinstance(error, MemoryError) or (torch is not None and isinstance(error, torch.OutOfMemoryError))
            or "DefaultCPUAllocator: can't allocate memory" in str(error))


def _own_message(error: DmlbenchError) -> str:
    """The error's message; one raised in a DataLoader worker arrives wrapped in the worker's
    traceback (torch re-raises it so), which ends with the message."""
    text = str(error)
    marker = f"\n{type(error).__module__}.{type(error).__qualname__}: "
    if text.startswith("Caught ") and marker in text:
        return text.rsplit(marker, 1)[1].strip()
    return text


def cmd_warm_start(args) -> None:
    from dmlbench import warm_start

    warm_start.serve(Path(args.socket), args.owner)


def main(argv: list[str] | None = None) -> None:
    from dmlbench import warm_start

    handed = warm_start.hand_off(sys.argv[1:] if argv is None else argv)
    if handed is not None:  # run by the warm-start server (CPU presets under Snakemake)
        sys.exit(handed)
    args = parser().parse_args(argv)
    try:
        args.func(args)
    except DmlbenchError as error:
        print(f"dmlbench {args.step}: error: {_own_message(error)}", file=sys.stderr)
        sys.exit(1)
    except OSError as error:  # the machine's: a folder that cannot be written, a path through a file
        explained = explain_os_error(error)
        if explained is None:
            raise
        print(f"dmlbench {args.step}: error: {explained}", file=sys.stderr)
        sys.exit(1)
    except (MemoryError, RuntimeError) as error:  # torch's OutOfMemoryError is a RuntimeError
        if not _out_of_memory(error):
            raise
        print(f"dmlbench {args.step}: error: out of memory ({' '.join(str(error).split())[:200]}). Lower "
              f"batch.size, eval.batch_size or input.resize, or run it on a device (or machine) with more "
              f"memory", file=sys.stderr)
        sys.exit(1)
