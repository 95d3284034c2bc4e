"""The knob experiment's steps (`suite.knobs`): a concatenated step's numbers, and the report folder."""

from __future__ import annotations

from pathlib import Path

from dmlbench.commands.common import spec_json


def cmd_knob_concatenate(args) -> None:
    from dmlbench.knobs import concatenate

    result = concatenate.concatenate([Path(p) for p in args.run_dirs], Path(args.output))
    print(f"{args.output}: {result['folds']} fold models joined, recall@1 {result['metrics']['recall@1']:.4f}")


def cmd_knob_aggregate(args) -> None:
    from dmlbench.report import knob_tables

    for line in knob_tables.aggregate(spec_json(args.spec), Path(args.output_dir))["lines"]:
        print(line)


def add(sub) -> None:
    """Add these commands to the command line's subparsers."""
    s = sub.add_parser("knob-concatenate", help="join the fold models' test embeddings of one knob step and seed")
    s.add_argument("--run-dirs", nargs="+", required=True, help="the fold runs' folders (each with model.pt)")
    s.add_argument("--output", required=True, help="concatenated.json")
    s.set_defaults(func=cmd_knob_concatenate)

    s = sub.add_parser("knob-aggregate", help="the knob experiment's steps, attribution, waterfalls and landing lines")
    s.add_argument("--spec", required=True, help="JSON: what Plan.knob_aggregate_spec gives")
    s.add_argument("--output-dir", required=True, help="the knob experiment's report folder")
    s.set_defaults(func=cmd_knob_aggregate)
