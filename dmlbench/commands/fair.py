"""The fair protocol's steps (`suite.fair`): folds, the search's ask / fold training / tell, the
best trial, the final summary and tables."""

from __future__ import annotations

import sys
from pathlib import Path

from dmlbench.commands.common import side_option, spec_json


def cmd_fair_splits(args) -> None:
    from dmlbench.data import folds

    folds.write(Path(args.manifest), Path(args.output), args.folds)


def cmd_fair_round(args) -> None:
    from dmlbench.fair import rounds

    rounds.run_search_job(spec_json(args.spec), spec_json(args.side, "--side"))


def cmd_fair_final(args) -> None:
    from dmlbench.fair import rounds

    rounds.run_final(spec_json(args.spec), spec_json(args.side, "--side"), Path(args.best))


def cmd_fair_best(args) -> None:
    from dmlbench.fair import study

    chosen = study.best([Path(p) for p in args.results], Path(args.output), Path(args.trials))
    print(
        f"best trial {chosen['trial']}: {chosen['params']} (validation MAP@R {chosen['objective']:.4f})",
        file=sys.stderr,
    )


def cmd_fair_summary(args) -> None:
    from dmlbench.fair import summary

    spec = spec_json(args.spec)
    files = [Path(p) for p in args.embeddings]
    folds = spec["folds"]
    summary.summarise(spec, [files[r * folds : (r + 1) * folds] for r in range(spec["repetitions"])], Path(args.output))


def cmd_fair_aggregate(args) -> None:
    from dmlbench.report import fair_tables

    fair_tables.aggregate(spec_json(args.spec), Path(args.output_dir))


def add(sub) -> None:
    """Add these commands to the command line's subparsers."""
    s = sub.add_parser("fair-splits", help="cut a manifest's training classes into class-disjoint folds")
    s.add_argument("--manifest", required=True, help="the dataset's manifest.csv")
    s.add_argument("--folds", type=int, required=True, help="the number of class-disjoint folds")
    s.add_argument("--output", required=True, help="the split file (path, label, part)")
    s.set_defaults(func=cmd_fair_splits)

    s = sub.add_parser(
        "fair-round",
        help="a search job: its round (ask its trial slots, train their folds, tell; the round's record written)",
    )
    s.add_argument("--spec", required=True, help="JSON: what Jobs.fair_round_job gives")
    side_option(s)
    s.set_defaults(func=cmd_fair_round)

    s = sub.add_parser(
        "fair-final",
        help="a final job: train its repetitions' folds with the best parameters (each one's record written)",
    )
    s.add_argument("--spec", required=True, help="JSON: what Jobs.fair_group_spec gives")
    side_option(s)
    s.add_argument("--best", required=True, help="best.json of the search")
    s.set_defaults(func=cmd_fair_final)

    s = sub.add_parser("fair-best", help="the best trial of a search, and trials.csv")
    s.add_argument("--results", nargs="+", required=True, help="every trial's result.json")
    s.add_argument("--output", required=True, help="best.json to write")
    s.add_argument("--trials", required=True, help="trials.csv to write (every trial, one row each)")
    s.set_defaults(func=cmd_fair_best)

    s = sub.add_parser("fair-summary", help="test metrics separated and concatenated, mean and 95 %% interval")
    s.add_argument("--spec", required=True, help="JSON: what Jobs.fair_summary_spec gives")
    s.add_argument("--embeddings", nargs="+", required=True, help="test.npz, repetition by repetition")
    s.add_argument("--output", required=True, help="summary.json to write")
    s.set_defaults(func=cmd_fair_summary)

    s = sub.add_parser("fair-aggregate", help="the fair tables, figure and paper-vs-fair table")
    s.add_argument("--spec", required=True, help="JSON: what Jobs.fair_aggregate_spec gives")
    s.add_argument("--output-dir", required=True, help="the fair table's report folder")
    s.set_defaults(func=cmd_fair_aggregate)
