"""`python -m dmlbench second-wave`: after the first wave, the seeds that decide what it left
inconclusive (docs/verdicts.md, "The second wave")."""

from __future__ import annotations

from dmlbench.commands.common import CONFIG_DIR, CONFIG_DIR_HELP, spec_json


def cmd_second_wave(args) -> None:
    from dmlbench.config import second_wave_plan
    from dmlbench.config.plan import Plan
    from dmlbench.run_config import RunConfig
    from dmlbench.training import projection

    config = dict(spec_json(args.config, "--config"), **({"preset": args.preset} if args.preset else {}))
    plan = Plan.load(args.config_dir, config)
    file, cells = second_wave_plan.write(plan)
    plan = Plan.load(args.config_dir, config)  # with the file's seeds
    added = [
        run
        for key, per_cell in cells.items()
        for run in plan.runs(key)
        if run.seed in per_cell.get(f"{run.dataset}/{run.method}", {}).get("seeds", ())
    ]
    hours = sum(projection.gpu_hours(RunConfig.from_dict(plan.resolve(run)), run.dataset) for run in added)
    print(
        f"{file}: {sum(len(c) for c in cells.values())} cells, {len(added)} trainings more "
        f"({hours:,.1f} GPU-hours projected); train them with the same snakemake command as the first wave"
    )


def add_user(sub) -> None:
    """Add the user's command `second-wave`."""
    s = sub.add_parser(
        "second-wave",
        help="after the first wave: more seeds only for the numbers and claims its certificates leave "
        "inconclusive and a second look decides within second_wave.max_seeds (reports/<preset>/second_wave.yaml)",
    )
    s.add_argument("--config-dir", default=CONFIG_DIR, help=CONFIG_DIR_HELP)
    s.add_argument("--preset", help="preset name (default: full, or the one in --config)")
    s.add_argument("--config", default="{}", help="JSON: changes as in --config of the workflow")
    s.set_defaults(func=cmd_second_wave)
