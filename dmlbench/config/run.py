"""One training run of the plan and the folder it writes."""

from __future__ import annotations

import re
from dataclasses import dataclass

# the characters of the ids that become folder names and the workflow's wildcards (its rules'
# `wildcard_constraints`): an id outside them would never be matched by a rule, so the plan refuses it.
# The first is a letter, digit or '_': `.` and `..` are folders of their own (`..` would put a
# method's runs of every dataset in one folder), `-x` reads as an option
EXPERIMENT_ID = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
METHOD_ID = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"  # a run's method adds `@<variant>` (a variant name: the same)
RUN_METHOD = r"[A-Za-z0-9_][A-Za-z0-9_.@-]*"


def check_id(kind: str, value, pattern: str, where: str) -> None:
    """Refuse an id the workflow's wildcards cannot hold, naming it and where it is defined."""
    from dmlbench.core.errors import ConfigError

    if not (isinstance(value, str) and re.fullmatch(pattern, value)):
        raise ConfigError(
            f"{where}: {kind} id {value!r} has characters the workflow's file names cannot hold: "
            f"rename it with letters, digits and '_', '.', '-' only, starting with a letter, digit or "
            f"'_' (a rule would never match it and its runs would silently not run; '.' and '..' "
            f"name folders of their own)"
        )


@dataclass(frozen=True, order=True)
class Run:
    """One training run. `method` may carry a sweep variant: `dro_topk_m@B80`."""

    experiment: str
    dataset: str
    method: str
    seed: int

    @property
    def base_method(self) -> str:
        return self.method.split("@")[0]

    @property
    def variant(self) -> str | None:
        return self.method.split("@")[1] if "@" in self.method else None

    def path(self, preset: str) -> str:
        return f"results/{preset}/{self.experiment}/{self.dataset}/{self.method}/seed{self.seed}"

    def train_log(self, preset: str) -> str:
        """The train job's log (`TRAIN_LOG`)."""
        return TRAIN_LOG.format(
            preset=preset, experiment=self.experiment, dataset=self.dataset, method=self.method, seed=self.seed
        )


# where the train job of a run writes its log (its wildcards: the rule's)
TRAIN_LOG = "logs/{preset}/train/{experiment}/{dataset}/{method}/seed{seed}.log"


@dataclass(frozen=True, order=True)
class FairRun(Run):
    """One fold training of the fair protocol: of search trial `index` (`stage` "search") or of
    final repetition `index` (`stage` "final")."""

    stage: str = "search"
    index: int = 0
    fold: int = 0

    def folder(self, preset: str) -> str:
        """Where the method × dataset's search and final runs live."""
        return f"results/{preset}/{self.experiment}/{self.dataset}/{self.method}"

    def path(self, preset: str) -> str:
        name = "trial" if self.stage == "search" else "rep"
        return f"{self.folder(preset)}/{self.stage}/{name}{self.index}/fold{self.fold}"
