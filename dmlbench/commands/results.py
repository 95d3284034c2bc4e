"""Tables, report, results table and certificates from finished runs; the plan, the doctor and
the preflight."""

from __future__ import annotations

import sys
from pathlib import Path

from dmlbench.commands.common import CONFIG_DIR, CONFIG_DIR_HELP, positive, preset_with_results, spec_json
from dmlbench.core.errors import DmlbenchError


def cmd_aggregate(args) -> None:
    from dmlbench.report import aggregate

    aggregate.aggregate(
        spec_json(args.spec), [Path(p) for p in args.metrics], Path(args.output_dir), [Path(p) for p in args.references]
    )


def cmd_report(args) -> None:
    from dmlbench.config.plan import Plan
    from dmlbench.report import index

    index.write(Plan.load(args.config_dir, spec_json(args.config, "--config")), Path(args.output))


def cmd_results_table(args) -> None:
    from dmlbench.config.plan import Plan
    from dmlbench.report import results_table

    plan = Plan.load(args.config_dir, spec_json(args.config, "--config"))
    output = Path(args.output or f"results/{plan.name}/runs.parquet")
    table = results_table.build(plan, output)
    print(f"{output}: {len(table)} rows; {results_table.counts(table)}", file=sys.stderr)


def cmd_results(args) -> None:
    from dmlbench.config.plan import PRESET_NAME
    from dmlbench.report import results_table

    if args.preset and not PRESET_NAME.fullmatch(args.preset):
        raise DmlbenchError(f"--preset {args.preset!r} is not a preset name (letters, digits, '_', '-')")
    preset = args.preset or (
        None
        if args.table
        else preset_with_results("results/*/runs.parquet", "results tables (results/<preset>/runs.parquet)")
    )
    table = Path(args.table or f"results/{preset}/runs.parquet")
    answer = results_table.query(table, args.sql, args.max_rows)
    more = len(answer) > args.max_rows
    answer = answer.head(args.max_rows)
    print(answer.to_csv(index=False) if args.csv else answer.to_string(index=False), end="\n" if not args.csv else "")
    if more:
        print(f"(the first {args.max_rows} rows; --max-rows N for more)", file=sys.stderr)


def cmd_verdict(args) -> None:
    from dmlbench.config import verdict_spec
    from dmlbench.config.plan import Plan
    from dmlbench.core.io import atomic_path, write_json
    from dmlbench.report.provenance import commit
    from dmlbench.verdicts import certificate, certificate_text, terminal

    config = dict(spec_json(args.config, "--config"), **({"preset": args.preset} if args.preset else {}))
    if "preset" not in config:  # the preset whose results are there
        config["preset"] = preset_with_results(
            "reports/*/*/runs.csv", "aggregated results (reports/<preset>/*/runs.csv)"
        )
        print(f"preset {config['preset']} (the one with results; --preset to choose)", file=sys.stderr)
    plan = Plan.load(args.config_dir, config)
    paper = verdict_spec.paper_of(plan, args.name)
    spec = verdict_spec.certificate_spec(plan, paper, verdict_spec.aggregated(plan, paper))  # whoever ran them
    ran = [e for e in spec["experiments"] if e["ran"]]
    unread = [e for e in ran if not Path(e["runs"]).exists()]
    if unread and len(unread) < len(ran) and not args.output_dir:  # a reading after a narrowed run
        # (with no results at all, or in the pipeline's certificate job, a missing file stays an error)
        for experiment in unread:
            experiment["ran"] = False
        print(
            f"{', '.join(e['id'] for e in unread)}: no aggregated results ({', '.join(e['runs'] for e in unread)}), "
            f"counted as not run",
            file=sys.stderr,
        )
    cert = certificate.build(spec, commit())
    text = certificate_text.markdown(cert)
    if args.output_dir:
        folder = Path(args.output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / "certificate.json", cert)
        with atomic_path(folder / "certificate.md") as tmp:
            tmp.write_text(text)
    only = args.name if args.name in plan.experiments else None
    if args.all:
        print(certificate_text.markdown(cert, only=only), end="")
    else:
        print(terminal.summary(cert, terminal.wants_colour(), only=only), end="")


def cmd_plan(args) -> None:
    from dmlbench.config.plan import Plan

    config = spec_json(args.config, "--config")
    plan = Plan.load(args.config_dir, {**config, **({"preset": args.preset} if args.preset else {})})
    if args.power:
        from dmlbench.config.claim_seeds import budget_line
        from dmlbench.config.power_table import plan_table

        print(plan_table(plan))
        print(budget_line(plan))
        return
    for run in plan.runs():
        print(run.path(plan.name))


def cmd_doctor(args) -> None:
    from dmlbench import doctor
    from dmlbench.config.plan import Plan

    config = dict(spec_json(args.config, "--config"), **({"preset": args.preset} if args.preset else {}))
    checks = doctor.run(Plan.load(args.config_dir, config), slurm=args.slurm, timeout=args.timeout)
    print(doctor.table(checks))
    if any(c.status == doctor.ACTION for c in checks):
        sys.exit(1)


def cmd_slurm_jobs(args) -> None:
    from dmlbench.orchestration import slurm_jobs

    jobs = slurm_jobs.suite_jobs(Path(args.folder))
    if args.cancel:
        slurm_jobs.cancel(jobs)
    print(slurm_jobs.report(jobs, args.cancel))


def cmd_preflight(args) -> None:
    from dmlbench.core.children import exit_on_signals
    from dmlbench.config.plan import Plan
    from dmlbench.preflight import runner

    exit_on_signals()  # a stopped preflight stops its probes and leaves no fork-server folder

    config = dict(spec_json(args.config, "--config"), **({"preset": args.preset} if args.preset else {}))
    plan = Plan.load(args.config_dir, config)
    output = Path(args.output_dir or f"reports/{plan.name}/preflight")
    passed = runner.run(
        plan,
        Path(args.workdir),
        output,
        args.image_side,
        args.device,
        args.devices,
        only_bounded=args.bounded,
        jobs=args.jobs,
        warm_steps=args.warm_steps,
        log=lambda m: print(m, file=sys.stderr, flush=True),
    )
    if not passed:
        sys.exit(1)


def add(sub) -> None:
    """Add the pipeline steps among these commands (tables, report, results table)."""
    s = sub.add_parser("aggregate", help="one experiment's runs → tables (CSV, Markdown) and figures")
    s.add_argument("--spec", required=True, help="JSON: what Jobs.aggregate_spec gives")
    s.add_argument("--metrics", nargs="+", required=True, help="the runs' metrics.json files")
    s.add_argument(
        "--references", nargs="*", default=[], help="metrics.json of the reference jobs (embeddings before training)"
    )
    s.add_argument("--output-dir", required=True, help="the experiment's report folder")
    s.set_defaults(func=cmd_aggregate)

    s = sub.add_parser("report", help="write the HTML report of a preset (contents, tables, figures)")
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument("--config", default="{}", help="JSON: the workflow's config (preset and changes)")
    s.add_argument("--output", required=True, help="reports/<preset>/index.html")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser(
        "results-table",
        help="every run's metrics, config fingerprint, commit and cost in one table: results/<preset>/runs.parquet",
    )
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument("--config", default="{}", help="JSON: the workflow's config (preset and changes)")
    s.add_argument("--output", help="default: results/<preset>/runs.parquet")
    s.set_defaults(func=cmd_results_table)


def add_user(sub) -> None:
    """Add the user's commands: results, verdict, plan, doctor, preflight."""
    s = sub.add_parser(
        "results",
        help="SQL over the results table (DuckDB; the table is named runs; the pipeline writes it, "
        "`dmlbench results-table` rebuilds it)",
    )
    s.add_argument("sql", help="e.g. \"SELECT method, avg(value) FROM runs WHERE metric = 'map@r' GROUP BY method\"")
    s.add_argument("--preset", help="reads results/<preset>/runs.parquet (default: the one preset that has one)")
    s.add_argument("--table", help="another runs.parquet")
    s.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
    s.add_argument("--max-rows", type=positive, default=200, help="rows shown at most (default 200)")
    s.set_defaults(func=cmd_results)

    s = sub.add_parser(
        "verdict",
        help="a paper's certificate from the finished results: every paper "
        "number's verdict and every claim's test (no training)",
    )
    s.add_argument("name", help="a paper (ms) or one of its experiments (ms.t1)")
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument(
        "--preset", help="preset name (default: the one in --config, else the one preset with aggregated results)"
    )
    s.add_argument("--config", default="{}", help="JSON: changes as in --config of the workflow")
    s.add_argument(
        "--output-dir",
        help="also write certificate.md and certificate.json here (the pipeline: reports/<preset>/<paper>)",
    )
    s.add_argument(
        "--all",
        action="store_true",
        help="print the whole certificate (Markdown: every number and "
        "claim) instead of the scorecard and the decided rows",
    )
    s.set_defaults(func=cmd_verdict)

    s = sub.add_parser(
        "plan", help="list the run folders a preset expands into (not the fair protocol's fold trainings)"
    )
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument("--preset", help="preset name (default: full, or the one in --config)")
    s.add_argument(
        "--config", default="{}", help='JSON: changes as in --config of the workflow ({"preset_file": "my.yaml"}, …)'
    )
    s.add_argument(
        "--power",
        action="store_true",
        help="instead: every paper number's and claim's power at the planned seeds, the seeds for 80 %% and their cost",
    )
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("doctor", help="what this machine has and lacks for a plan (no training)")
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument("--preset", help="preset name (default: full, or the one in --config)")
    s.add_argument("--config", default="{}", help="JSON: changes as in --config of the workflow")
    s.add_argument(
        "--slurm",
        action="store_true",
        help="also check the SLURM executor plugin and the GPU partition's limits (sinfo, sacctmgr)",
    )
    s.add_argument("--timeout", type=float, default=5.0, help="seconds per source probe")
    s.set_defaults(func=cmd_doctor)

    s = sub.add_parser(
        "slurm-jobs", help="the suite's SLURM jobs still queued or running for a folder (after a killed run)"
    )
    s.add_argument("--folder", default=".", help="the workflow's working folder (default: this one)")
    s.add_argument("--cancel", action="store_true", help="cancel them (scancel)")
    s.set_defaults(func=cmd_slurm_jobs)

    s = sub.add_parser("preflight", help="run every code path of a plan once on fixtures; project its compute budget")
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument("--preset", help="preset name (default: full, or the one in --config)")
    s.add_argument("--config", default="{}", help="JSON: changes as in --config of the workflow")
    s.add_argument(
        "--image-side",
        type=positive,
        default=None,
        help="crop side in pixels for the probes (CPU); batch, method and network unchanged",
    )
    s.add_argument("--device", default="auto", help="auto | cpu | cuda")
    s.add_argument("--devices", type=positive, default=8, help="devices for the wall-time projection")
    s.add_argument(
        "--bounded",
        action="store_true",
        help="only a part covering every paper, backbone, loss, miner, sampler and scheme",
    )
    s.add_argument(
        "--warm-steps",
        type=int,
        default=None,
        help="steps timed after a first one, per group (default: 5 on a GPU, 0 on a CPU)",
    )
    s.add_argument(
        "--jobs", type=positive, default=None, help="probes at a time (default: 1 on a GPU, one per two CPU cores)"
    )
    s.add_argument("--workdir", default="data/preflight", help="fixtures and scratch run folders")
    s.add_argument("--output-dir", default=None, help="default: reports/<preset>/preflight")
    s.set_defaults(func=cmd_preflight)
