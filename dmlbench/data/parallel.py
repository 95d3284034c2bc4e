"""Decoding many images on every core (the cache and store steps): the images cut into blocks,
each block handled by one worker process, the blocks' results returned in order."""

from __future__ import annotations

import functools
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Callable

from dmlbench.core.children import die_with_parent
from dmlbench.core.progress import Bar

BLOCK = 256  # images per task: large enough to hide the hand-over, small enough to spread the work


def default_workers() -> int:
    """The cores this process may use (its CPU affinity, as SLURM and taskset set it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def blocks(items: list, size: int = BLOCK) -> list[tuple[int, list]]:
    """(start, items[start:start + size]) for consecutive blocks."""
    return [(start, items[start : start + size]) for start in range(0, len(items), size)]


def map_blocks(
    function: Callable, tasks: list[tuple], workers: int, what: str = "images", log=lambda m: print(m, file=sys.stderr)
) -> list:
    """`function(*task)` for every task, on `workers` processes (in this process for one),
    results in the order of `tasks`; every 5,000 items done (a task's second element is its
    items) is logged, and on a terminal a bar shows the time left."""
    results, done, shown = [], 0, 0
    bar = Bar(sum(len(task[1]) for task in tasks), what.split()[-1], at_least=BLOCK)

    def count(task) -> None:
        nonlocal done, shown
        done += len(task[1])
        bar.update(len(task[1]))
        if done // 5000 > shown:
            shown = done // 5000
            log(f"  {done} {what}")

    with bar:
        if workers <= 1 or len(tasks) <= 1:
            for task in tasks:
                results.append(function(*task))
                count(task)
            return results
        # fork: the workers inherit the imports; these steps never start torch's thread pools. The
        # workers end with this process (a stopped step leaves none waiting for work)
        with ProcessPoolExecutor(
            min(workers, len(tasks)),
            mp_context=multiprocessing.get_context("fork"),
            initializer=functools.partial(die_with_parent, os.getpid()),
        ) as pool:
            for task, result in zip(tasks, pool.map(_call, [function] * len(tasks), tasks)):
                results.append(result)
                count(task)
    return results


def _call(function: Callable, task: tuple):
    return function(*task)
