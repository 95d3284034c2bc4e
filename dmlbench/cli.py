"""dmlbench: deep metric learning's benchmark, the five papers' tables and the fair protocol.

The pipeline runs with Snakemake (`snakemake --cores all --resources gpu=8`; README.md); these
commands read what it made and check a machine. `dmlbench steps --help` lists the pipeline's
steps, which the Snakemake rules run and which can be run by hand.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from dmlbench.commands import fair, knobs, results, steps, waves
from dmlbench.core.errors import DmlbenchError, explain_os_error

USER_COMMANDS = ("results", "verdict", "plan", "doctor", "slurm-jobs", "preflight", "second-wave")
STEP_GROUPS = (steps, results, fair, knobs)


class _Unlisted:
    """Subparsers whose commands parse but are not listed in the help: the pipeline's steps at
    the top level, where the Snakemake rules call them (`dmlbench train …`)."""

    def __init__(self, sub):
        self.sub = sub

    def add_parser(self, name: str, **kwargs):
        kwargs.pop("help", None)  # argparse lists a subcommand only when it has help
        return self.sub.add_parser(name, **kwargs)


def parser() -> argparse.ArgumentParser:
    from dmlbench import __version__

    p = argparse.ArgumentParser(
        prog="dmlbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--version", action="version", version=f"dmlbench {__version__}")
    sub = p.add_subparsers(
        dest="step", required=True, title="commands", metavar="{" + ",".join((*USER_COMMANDS, "steps")) + "}"
    )
    results.add_user(sub)
    waves.add_user(sub)
    listed = sub.add_parser(
        "steps",
        help="the pipeline's steps, as the Snakemake rules run them "
        "(`dmlbench steps --help`; each also as `dmlbench <step>`)",
        description="The pipeline's steps. The Snakemake rules run each as "
        "`python -m dmlbench <step> …`; `dmlbench steps <step> …` is the same.",
    )
    inner = listed.add_subparsers(dest="step", required=True, title="steps", help="the step to run")
    for commands in STEP_GROUPS:
        commands.add(inner)
        commands.add(_Unlisted(sub))
    return p


def _out_of_memory(error: BaseException) -> bool:
    """Python's, CUDA's (torch.OutOfMemoryError) or torch's CPU allocator's."""
    torch = sys.modules.get("torch")
    return (
        isinstance(error, MemoryError)
        or (torch is not None and isinstance(error, torch.OutOfMemoryError))
        or "DefaultCPUAllocator: can't allocate memory" in str(error)
    )


def _how_to_resume(args) -> str:
    """What a rerun does after Ctrl-C: a training resumes after the last epoch it finished."""
    run_dir = getattr(args, "run_dir", None)
    if isinstance(run_dir, str):
        try:
            done = sum(1 for line in open(f"{run_dir}/epochs.jsonl") if line.strip())
        except OSError:
            done = 0
        if done:
            return f"rerun resumes {run_dir} after epoch {done}"
        return f"{run_dir} had finished no epoch: a rerun starts it afresh"
    return "rerun the command: finished work is kept"


def _own_message(error: DmlbenchError) -> str:
    """The error's message; one raised in a DataLoader worker arrives wrapped in the worker's
    traceback (torch re-raises it so), which ends with the message."""
    text = str(error)
    marker = f"\n{type(error).__module__}.{type(error).__qualname__}: "
    if text.startswith("Caught ") and marker in text:
        return text.rsplit(marker, 1)[1].strip()
    return text


def main(argv: list[str] | None = None) -> None:
    from dmlbench.orchestration import warm_start

    handed = warm_start.hand_off(sys.argv[1:] if argv is None else argv)
    if handed is not None:  # run by the warm-start server (CPU presets under Snakemake)
        sys.exit(handed)
    args = parser().parse_args(argv)
    args.command_line = main  # what the warm-start server's forked children run
    try:
        args.func(args)
    except BrokenPipeError:  # the reader went away (`… | head`): nothing more to say, as `cat` would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except SystemExit as stop:  # SIGTERM or SIGHUP ended a training (`train.stops_as_exit`): said as Ctrl-C is
        if stop.code in (128 + signal.SIGTERM, 128 + signal.SIGHUP):
            name = signal.Signals(stop.code - 128).name
            print(f"dmlbench {args.step}: stopped by {name}; {_how_to_resume(args)}", file=sys.stderr)
            sys.stderr.flush()
        raise
    except KeyboardInterrupt:  # Ctrl-C: one line, then the end by SIGINT, as the shell expects
        print(f"dmlbench {args.step}: interrupted; {_how_to_resume(args)}", file=sys.stderr)
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
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
        print(
            f"dmlbench {args.step}: error: out of memory ({' '.join(str(error).split())[:200]}). Lower "
            f"batch.size, eval.batch_size or input.resize, or run it on a device (or machine) with more "
            f"memory",
            file=sys.stderr,
        )
        sys.exit(1)
