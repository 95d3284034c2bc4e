"""The fair protocol's GPU jobs pass their spec on the command line (`workflow/rules/fair.smk`:
`--spec '<JSON>'`), and Snakemake runs a job's command as one argument of `bash -c`, which the OS
bounds (Linux: `MAX_ARG_STRLEN`, 128 KiB; past it the job fails at exec with "Argument list too
long"). A spec grows with the fold trainings of its job: `fair.parallel` × `fair.folds` of a search
job (one round), `fair.repetitions_per_job` × `fair.folds` of a final job. So the
largest of each (a method's first job) is measured when the plan loads, and a setting that would
pass the limit is refused, naming it with the largest value that fits (the longest prefix of that
job's trials or repetitions that does: the first job at a smaller setting)."""

from __future__ import annotations

import shlex

from dmlbench.config.job_params import as_json
from dmlbench.core.errors import ConfigError

ARGUMENT_LIMIT = 32 * 4096  # Linux's longest argument (MAX_ARG_STRLEN: 32 pages of 4 KiB)
ROOM = 4096  # the rest of a job's command: the program, its output's and its log's paths


def check(plan) -> None:
    """Every fair experiment's search and final jobs fit the limit, their side settings with them."""
    from dmlbench.config.jobs import of

    jobs = of(plan)
    for key in plan.chosen_ids:
        if not plan.is_fair(key):
            continue
        s = plan.fair_settings(key)
        counts = {
            "parallel": (min(s["parallel"], s["trials"]), jobs.fair_round_job, "trials"),
            "repetitions_per_job": (
                min(s["repetitions_per_job"], s["repetitions"]),
                jobs.fair_group_spec,
                "repetitions",
            ),
        }
        for setting, (count, spec_of, items) in counts.items():
            worst = None  # (bytes per room, size, room, job, spec): the job that fills its room the most
            for dataset, method in plan.fair_pairs(key):
                room = ARGUMENT_LIMIT - ROOM - len(shlex.quote(as_json(jobs.fair_side(key, dataset, method))))
                spec = spec_of(key, dataset, method, 0)  # the first: the largest
                size = len(shlex.quote(as_json(spec)))
                if worst is None or size / room > worst[0]:
                    worst = (size / room, size, room, f"{key} on {dataset}, method {method}", spec)
            if worst is not None and worst[1] > worst[2]:
                _, size, room, job, spec = worst
                _refuse(plan, key, setting, count, size, job, _longest_prefix(spec, items, room))


def _longest_prefix(spec: dict, items: str, room: int) -> int:
    """The most of `spec[items]` (from the first) that a spec of them holds within `room` bytes."""
    low, high = 0, len(spec[items])
    while low < high:
        middle = (low + high + 1) // 2
        if len(shlex.quote(as_json({**spec, items: spec[items][:middle]}))) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def _refuse(plan, key: str, setting: str, count: int, size: int, job: str, fits: int) -> None:
    given = "fair" in plan._subset(key) and setting in plan._subset(key)["fair"]
    where = f"preset {plan.name}.subset.{key}" if given else f"{plan.sources[key]}: experiment {key}"
    unit = "trial slot" if setting == "parallel" else "repetition"
    fix = f"set it to at most {fits}" if fits else f"even one {unit} is too long: lower fair.folds"
    raise ConfigError(
        f"{where}.fair.{setting}: {plan.fair_settings(key)[setting]}: a job of {job} would hold {count} "
        f"{unit}s, a spec of {size:,} bytes on its command line, over the {ARGUMENT_LIMIT:,} bytes "
        f"the OS allows one argument ('Argument list too long'); {fix}"
    )
