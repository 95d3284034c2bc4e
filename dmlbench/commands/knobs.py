"""The knob experiment's steps (`suite.knobs`): a joined step's fold runs and their concatenated
numbers (one job), and the report folder."""

from __future__ import annotations

from pathlib import Path

from dmlbench.commands.common import spec_json


def cmd_knob_joined(args) -> None:
    from dmlbench.commands.steps import train_run
    from dmlbench.knobs import concatenate

    folds = spec_json(args.spec)["folds"]
    for fold in folds:  # in turn; a fold trained before with these settings is kept
        train_run({**fold["spec"], **fold["side"]}, Path(fold["metrics"]).parent, Path(fold["metrics"]))
    result = concatenate.concatenate([Path(fold["metrics"]).parent for fold in folds], Path(args.output))
    print(f"{args.output}: {result['folds']} fold models joined, recall@1 {result['metrics']['recall@1']:.4f}")


def cmd_knob_aggregate(args) -> None:
    from dmlbench.report import knob_tables

    for line in knob_tables.aggregate(spec_json(args.spec), Path(args.output_dir))["lines"]:
        print(line)


def add(sub) -> None:
    """Add these commands to the command line's subparsers."""
    s = sub.add_parser(
        "knob-joined", help="train a joined knob step's fold runs (one seed) and join their test embeddings"
    )
    s.add_argument("--spec", required=True, help="JSON: what dmlbench.config.knob_jobs.joined_spec gives")
    s.add_argument("--output", required=True, help="the step's concatenated.json")
    s.set_defaults(func=cmd_knob_joined)

    s = sub.add_parser("knob-aggregate", help="the knob experiment's steps, attribution, waterfalls and landing lines")
    s.add_argument("--spec", required=True, help="JSON: what Jobs.knob_aggregate_spec gives")
    s.add_argument("--output-dir", required=True, help="the knob experiment's report folder")
    s.set_defaults(func=cmd_knob_aggregate)
