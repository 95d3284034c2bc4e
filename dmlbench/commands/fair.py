"""The fair protocol's steps (`suite.fair`): folds, the search's ask / fold training / tell, the
best trial, the final summary and tables."""

from __future__ import annotations

import sys
from pathlib import Path

from dmlbench.commands.common import spec_json


def cmd_fair_splits(args) -> None:
    from dmlbench.data import folds

    folds.write(Path(args.manifest), Path(args.output), args.folds)


def cmd_fair_ask(args) -> None:
    from dmlbench.fair import study

    asked = study.ask(spec_json(args.spec), Path(args.output))
    print(f"trial {asked['trial']} (slot {asked['slot']}): {asked['params']}", file=sys.stderr)


def cmd_fair_train(args) -> None:
    from dmlbench.fair import fold_run

    fold_run.run(spec_json(args.spec), Path(args.params), Path(args.run_dir), Path(args.output),
                 Path(args.test_output) if args.test_output else None)


def cmd_fair_tell(args) -> None:
    from dmlbench.fair import study

    told = study.tell(spec_json(args.spec), Path(args.params), [Path(p) for p in args.folds], Path(args.output))
    print(f"trial {told['trial']}: objective {told['objective']}", file=sys.stderr)


def cmd_fair_best(args) -> None:
    from dmlbench.fair import study

    chosen = study.best([Path(p) for p in args.results], Path(args.output), Path(args.trials))
    print(f"best trial {chosen['trial']}: {chosen['params']} (validation MAP@R {chosen['objective']:.4f})",
          file=sys.stderr)


def cmd_fair_summary(args) -> None:
    from dmlbench.fair import summary

    spec = spec_json(args.spec)
    files = [Path(p) for p in args.embeddings]
    folds = spec["folds"]
    summary.summarise(spec, [files[r * folds:(r + 1) * folds] for r in range(spec["repetitions"])],
                      Path(args.output))


def cmd_fair_aggregate(args) -> None:
    from dmlbench.report import fair_tables

    fair_tables.aggregate(spec_json(args.spec), Path(args.output_dir))


def add(sub) -> None:
    """Add these commands to the command line's subparsers."""
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
