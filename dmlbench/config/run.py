"""One training run of the plan and the folder it writes."""

from __future__ import annotations

from dataclasses import dataclass


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
