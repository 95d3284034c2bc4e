"""Model selection on the run's evaluation split (`early_stopping` settings).

With `patience` P, the run evaluates after every epoch; the selected epoch is the one with the
highest `metric` (the first of equal values); training stops once P evaluated epochs have passed
without a better one, and the model of the selected epoch becomes `model.pt`, which records whether
training stopped by patience or ran into the epoch cap (`epochs`) with patience left: a capped run
might still have improved. The selected model's weights travel in the checkpoint, so a resumed run
selects exactly as an uninterrupted one.
Used by the fair protocol, whose evaluation split is the held-out validation fold, never the test
set. Without patience every epoch is trained and the last model is kept, except in a suite.knobs
run on folds that keeps a paper's selection on the test set (`data.fold.epochs_scored_on`): its
epochs are scored on the test half and the best one by Recall@1 is kept, as the paper chose its
epoch (`for_run`), so that "epoch selection" holds that choice and "data trained on" does not.
"""

from __future__ import annotations

import copy

from dmlbench.run_config import EarlyStopping


class Selection:
    """The best epoch so far and its model's weights (CPU copies)."""

    @classmethod
    def for_run(cls, cfg, history: list[dict], checkpoint: dict | None) -> "Selection":
        """The run's selection (`cfg`: its RunConfig): its early stopping, or the paper's test-set
        choice of epoch for a run on folds whose epochs are scored on the test half."""
        fold = cfg.data.get("fold") or {}
        if fold.get("epochs_scored_on") == "test_half" and not cfg.early_stopping.patience:
            chosen = cls(EarlyStopping(patience=cfg.epochs, metric="recall@1"), history, checkpoint)
            chosen.every_epoch = False  # the paper's `eval.every` may skip epochs (profs on SOP: 5)
            return chosen
        return cls(cfg.early_stopping, history, checkpoint)

    def __init__(self, cfg: EarlyStopping, history: list[dict], checkpoint: dict | None):
        self.patience = cfg.patience
        self.metric = cfg.metric
        self.history = history
        self.best_model = (checkpoint or {}).get("best_model")
        self.every_epoch = True  # early stopping evaluates every epoch: a row without the metric is an error

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
        if self.metric not in row and not self.every_epoch:
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
