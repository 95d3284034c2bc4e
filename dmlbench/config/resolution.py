"""Each run's settings, merged in this order: defaults < experiment `train` < experiment
`per_dataset[dataset]` < method `train` < method `per_dataset[dataset]` < preset `overrides` < preset
`per_dataset[dataset]` < preset `cpu_fallback` (no CUDA) < preset `subset[experiment].train` < sweep
variant `train`. The swept setting comes last because it is the experiment's x axis: a preset
shrinks a sweep by choosing variants (`subset`), it cannot flatten it. A fair fold training is its
method's settings with its own seed, stage and fold; a knob step's: `KnobSpecs`."""

from __future__ import annotations

from dmlbench.config.loading import deep_merge, merge_layers, plain_copy
from dmlbench.config import trunk_digests
from dmlbench.config.run import FairRun, Run
from dmlbench.methods import plugin_code


class RunSettings:
    """The resolution part of `Plan` (which holds the catalogue it reads)."""

    def resolve(self, run: Run) -> dict:
        """The complete settings of one run, as training reads them (the caller's own copy)."""
        return plain_copy(self.resolved(run))

    def trained_as(self, run: Run) -> Run:
        """The run whose training `run` reads: itself, or the earlier run of the plan it is the
        same training as (`dmlbench.config.run_dedup`: its folder a link to that one's)."""
        from dmlbench.config import run_dedup

        return run_dedup.trained_as(self).get(run, run)

    def trained_settings(self, run: Run) -> dict:
        """The settings of the training `run` reads (its own, or the earlier run's it is linked to)."""
        return self.resolved(self.trained_as(run))

    def accepted_fingerprints(self, run: Run) -> list[str]:
        """The settings' fingerprints a run's numbers may carry: the training it reads, and for a
        run that is an earlier run's training (`run_dedup`) its own too (that training made in its
        own folder, under a selection without the earlier run)."""
        from dmlbench.training.run_folder import fingerprint

        own, first = fingerprint(self.resolved(run)), self.trained_as(run)
        return [own] if first == run else [fingerprint(self.resolved(first)), own]

    def resolved(self, run: Run) -> dict:
        """`resolve`, made once per run and shared: to be read, not changed (the dry run of `full`
        asks for each run's settings several times)."""
        cache = self.__dict__.setdefault("_resolved", {})
        if run not in cache:
            cache[run] = trunk_digests.with_recorded(self.preset, self._resolve(run))
        return cache[run]

    def _resolve(self, run: Run, with_preset: bool = True) -> dict:
        if isinstance(run, FairRun):
            return self._resolve_fair(run)
        exp = self.experiments[run.experiment]
        if exp.get("kind") == "knobs":
            return self._resolve_knob(run)
        method = self.method_of(run.base_method, f"experiment {run.experiment}")
        sweep = (exp.get("sweep") or {}).get(run.variant) or {}
        own = (method.get("per_dataset") or {}).get(run.dataset) or {}  # the method's settings on this dataset
        preset_layers = (
            (
                self.preset["overrides"],
                (self.preset.get("per_dataset") or {}).get(run.dataset),
                self.cpu_fallback,
                self._subset(run.experiment).get("train"),
            )
            if with_preset
            else ()
        )
        cfg = merge_layers(
            self.defaults,
            exp.get("train"),
            (exp.get("per_dataset") or {}).get(run.dataset),
            method.get("train"),
            own.get("train"),
            *preset_layers,
            sweep.get("train"),
        )
        miner = deep_merge(method["miner"], sweep["miner"]) if sweep.get("miner") else method.get("miner")
        cfg["method"] = {
            "name": run.method,
            "loss": deep_merge(deep_merge(method["loss"], own.get("loss")), sweep.get("loss")),
            "miner": miner,
            "sampler": method.get("sampler", "m_per_class"),
        }
        code = plugin_code.digests(cfg["method"])
        if code:  # a user's component: its files' digests decide its numbers too
            cfg["method"]["code"] = code
        cfg["seed"] = run.seed
        cfg["run"] = {
            "preset": self.name,
            "experiment": run.experiment,
            "dataset": run.dataset,
            "method": run.method,
            "seed": run.seed,
        }
        cfg["data"] = {"manifest": self.manifest(run.dataset)}
        if run.dataset in self.csv_digests:  # a CSV dataset's content decides the numbers, its path not
            cfg["data"]["csv_sha256"] = self.csv_digests[run.dataset]
        if self.preset["data"].get("max_image_pixels"):  # only where set: other runs' settings unchanged
            cfg["data"]["max_image_pixels"] = self.preset["data"]["max_image_pixels"]
        store = self.store(run.dataset, cfg["input"]["resize"])
        if store:
            cfg["data"]["store"] = store
        return cfg

    def _resolve_fair(self, run: FairRun) -> dict:
        """A fold training: the method's run settings with its seed, stage, index and fold (the
        settings without those are merged once per experiment × dataset × method)."""
        return plain_copy(self._fair_settings_shared(run))

    def _fair_settings_shared(self, run: FairRun) -> dict:
        """`_resolve_fair` without the copy: only `seed`, `run` and `data` are the fold training's
        own, the rest is the method's settings shared by all its fold trainings (not to be changed;
        the dry run of `full` builds tens of thousands of these)."""
        cache = self.__dict__.setdefault("_fair_bases", {})
        key = (run.experiment, run.dataset, run.method)
        if key not in cache:
            cache[key] = self.resolved(Run(run.experiment, run.dataset, run.method, 0))
        base = cache[key]
        folds = self.fair_settings(run.experiment)["folds"]
        fold = {"splits": self.fair_splits(run.dataset, folds), "index": run.fold, "of": folds}
        return {
            **base,
            "seed": run.seed,
            "run": {**base["run"], "seed": run.seed, "stage": run.stage, "index": run.index, "fold": run.fold},
            "data": {**base["data"], "fold": fold},
        }
