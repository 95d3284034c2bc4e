"""Model selection on the run's evaluation split (`early_stopping` settings).

With `patience` P, the run evaluates after every epoch; the selected epoch is the one with the
highest `metric` (the first of equal values); training stops once P evaluated epochs have passed
without a better one, and the model of the selected epoch becomes `model.pt`, which records whether
training stopped by patience or ran into the epoch cap (`epochs`) with patience left: a capped run
might still have improved. The selected model's weights travel in the checkpoint, so a resumed run
selects exactly as an uninterrupted one.
Used by the fair protocol, whose evaluation split is the held-out validation fold, never the test
set. Without patience every epoch is trained and the last model is kept.
"""

from __future__ import annotations

import copy

from dmlbench.run_config import EarlyStopping


class Selection:
    """The best epoch so far and its model's weights (CPU copies)."""

    def __init__(self, cfg: EarlyStopping, history: list[dict], checkpoint: dict | None):
        self.patience = cfg.patience
        self.metric = cfg.metric
        self.history = history
        self.best_model = (checkpoint or {}).get("best_model")

    @property
    def best_epoch(self) -> int | None:
        rows = [row for row in self.history if self.metric in row]
        if not rows:
            return None
        return max(rows, key=lambda row: row[self.metric])["epoch"]  # max keeps the first of ties

    def stop(self) -> bool:
        """Whether `patience` evaluated epochs have passed since the best one."""
        best = self.best_epoch
        return bool(self.patience) and best is not None and len(self.history) - best >= self.patience

    def after_epoch(self, row: dict, model) -> None:
        """Keep the model's weights when the epoch just appended to the history is the best."""
        if not self.patience:
            return
        if self.metric not in row:
            raise KeyError(f"early stopping on {self.metric}, but epoch {row['epoch']} has no such metric")
        if self.best_epoch == row["epoch"]:
            self.best_model = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}

    def state(self) -> dict:
        return {"best_model": self.best_model} if self.patience else {}

    def restore_best(self, model, log) -> None:
        if not self.patience:
            return
        model.load_state_dict(copy.deepcopy(self.best_model))
        log(
            f"selected epoch {self.best_epoch} of {len(self.history)} ({self.metric} "
            f"{self._best_value():.4f} on the evaluation split)"
        )

    def summary(self) -> dict:
        """What model.pt records about the selection, once training has ended: `stopped_by` is
        "patience" when `patience` epochs passed after the best, else "cap" (the epoch cap ended it)."""
        if not self.patience:
            return {}
        return {
            "selected_epoch": self.best_epoch,
            "epochs_trained": len(self.history),
            "selected_by": self.metric,
            "stopped_by": "patience" if self.stop() else "cap",
        }

    def _best_value(self) -> float:
        return next(row[self.metric] for row in self.history if row["epoch"] == self.best_epoch)
