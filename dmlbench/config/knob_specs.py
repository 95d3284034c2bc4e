"""The runs of knob experiments (`kind: knobs`, `suite.knobs`) and the specs their steps read (a
part of `Plan`). For each paper's recipe on a dataset (`knob_recipes`) and for its headline method
and the shared baseline, every step of the two paths (`dmlbench.knobs.paths`) is a training run
named `<method>@<paper>-<step>`: the paper recipe's resolved settings with the moved knobs'
settings taken from the fair recipe. The method (loss, miner, sampler, their hyper-parameters and
the PROFS scheme) is the paper row's on every step. The data knob trains on all folds but one of
the training half (fold `seed mod folds` held out); a step that moves the evaluation knob trains
one run per fold (`…@<paper>-<step>.fold<k>`), whose test embeddings are joined (`concatenated.json`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from dmlbench.config import knob_recipes
from dmlbench.config.loading import deep_merge, plain_copy
from dmlbench.config.run import Run
from dmlbench.core.errors import ConfigError
from dmlbench.knobs import paths as knob_paths
from dmlbench.knobs.derive import Knob


@dataclass(frozen=True)
class KnobPath:
    """One recipe's paths on one dataset: its knobs, steps and the two methods run along them."""

    experiment: str
    paper: str
    dataset: str
    recipe: knob_recipes.Recipe  # on this dataset
    knobs: tuple[Knob, ...]
    paths: knob_paths.Paths
    methods: tuple[tuple[str, str], ...]  # (run's method: the paper row or the baseline, fair method id)
    stand_in: str | None = None  # the dataset whose paper recipe this one takes (no paper trains on it)


@dataclass(frozen=True)
class KnobRun:
    """What one run of a knob experiment trains: a step of a path, for one method (and fold)."""

    path: KnobPath
    method: str  # the paper row's method or the baseline
    fair_method: str  # its id in suite.fair
    step: knob_paths.Step
    fold: int | None  # the fold model of a step that moves the evaluation knob


class KnobSpecs:
    """Runs, resolution, inputs and specs of knob experiments."""

    def is_knobs(self, experiment: str) -> bool:
        return self.experiments[experiment].get("kind") == "knobs"

    def knob_paths(self, experiment: str) -> list[KnobPath]:
        cache = self.__dict__.setdefault("_knob_paths", {})
        if experiment not in cache:
            cache[experiment] = self._build_knob_paths(experiment)
        return cache[experiment]

    def _build_knob_paths(self, experiment: str) -> list[KnobPath]:
        exp = self.experiments[experiment]
        subset = self._subset(experiment)
        catalogue = knob_recipes.catalogue(self)
        chosen_knobs = subset.get("knobs")
        chosen_methods = subset.get("methods")
        specs = {k.name: k for k in catalogue.knobs}
        recipes = {(r.paper, r.dataset): r for r in knob_recipes.recipes(self)}
        out = []
        for dataset in self.datasets_of(experiment):
            source = (exp.get("stand_in") or {}).get(dataset, dataset)
            for paper, method in catalogue.headline.items():
                recipe = recipes.get((paper, source))
                if recipe is None or (chosen_methods is not None and method not in chosen_methods):
                    continue
                if source != dataset:  # the stand-in's paper table and suite.fair's run, on this dataset
                    recipe = replace(
                        recipe,
                        dataset=dataset,
                        paper_run=replace(recipe.paper_run, dataset=dataset),
                        fair_run=replace(recipe.fair_run, dataset=dataset),
                    )
                knobs = [
                    k for k in knob_recipes.knobs_of(self, recipe) if chosen_knobs is None or k.name in chosen_knobs
                ]
                names = [k.name for k in knobs]
                needs = {k.name: specs[k.name].needs for k in knobs}
                try:
                    paths = knob_paths.build(names, needs)
                except ValueError as error:
                    raise ConfigError(
                        f"preset {self.name}.subset.{experiment}.knobs: {paper} on {dataset}: {error}: choose it too"
                    ) from None
                methods = ((recipe.paper_run.method, method), (catalogue.baseline, catalogue.baseline))
                out.append(
                    KnobPath(
                        experiment,
                        paper,
                        dataset,
                        recipe,
                        tuple(knobs),
                        paths,
                        methods,
                        source if source != dataset else None,
                    )
                )
        return out

    def knob_run_index(self, experiment: str) -> dict[Run, KnobRun]:
        """Every run of the experiment and what it trains."""
        cache = self.__dict__.setdefault("_knob_runs", {})
        if experiment not in cache:
            seeds = (
                self._subset(experiment).get("seeds")
                or self.preset["seeds"]
                or self.experiments[experiment].get("seeds")
                or [0]
            )
            folds = self.knob_folds
            index = {}
            for path in self.knob_paths(experiment):
                for method, fair_method in path.methods:
                    for step in path.paths.steps:
                        if self.knob_twin(path, method, fair_method, step) is not None:
                            continue  # its runs are another step's fold runs
                        concatenated = self._moves(path, step, "evaluation")
                        for seed in seeds:
                            for fold in range(folds) if concatenated else [None]:
                                name = self.knob_step_name(path, method, step) + (
                                    f".fold{fold}" if concatenated else ""
                                )
                                index[Run(experiment, path.dataset, name, seed)] = KnobRun(
                                    path, method, fair_method, step, fold
                                )
            cache[experiment] = index
        return cache[experiment]

    @staticmethod
    def knob_step_name(path: KnobPath, method: str, step: knob_paths.Step) -> str:
        return f"{method}@{path.paper}-{step.name}"

    @property
    def knob_folds(self) -> int:
        """The fold count of the fair protocol (suite.fair's, with the preset's subset)."""
        return self.fair_settings(knob_recipes.FAIR)["folds"]

    def _selects_on_test(self, path: KnobPath) -> bool:
        """Whether the paper chose its epoch on the test set (its table's Recall@1 is test-selected)."""
        table = self.experiments[path.recipe.paper_run.experiment].get("table") or {}
        return "recall@1" in (table.get("test_selected") or [])

    def _moves(self, path: KnobPath, step: knob_paths.Step, protocol: str) -> bool:
        """Whether `step` moves the knob that adds protocol part `protocol`."""
        specs = {k.name: k for k in knob_recipes.catalogue(self).knobs}
        return any(specs[name].protocol == protocol for name in step.moved)

    def knob_twin(self, path: KnobPath, method: str, fair_method: str, step: knob_paths.Step) -> knob_paths.Step | None:
        """The step whose fold runs are this step's runs: a step on folds that does not join them,
        whose settings equal those of the same step with the evaluation knob moved (then seed s's
        run is that step's fold `s mod folds`, trained once)."""
        cache = self.__dict__.setdefault("_knob_twins", {})
        key = (path.experiment, path.paper, path.dataset, method, step.moved)
        if key not in cache:
            cache[key] = None
            joined = [k.name for k in knob_recipes.catalogue(self).knobs if k.protocol == "evaluation"]
            if self._moves(path, step, "folds") and not self._moves(path, step, "evaluation") and joined:
                twin = next((s for s in path.paths.steps if set(s.moved) == set(step.moved) | {joined[0]}), None)
                if twin is not None and self._knob_settings(
                    path, method, fair_method, step, 0, None
                ) == self._knob_settings(path, method, fair_method, twin, 0, 0):
                    cache[key] = twin
        return cache[key]

    def _resolve_knob(self, run: Run) -> dict:
        info = self.knob_run_index(run.experiment)[run]
        cfg = self._knob_settings(info.path, info.method, info.fair_method, info.step, run.seed, info.fold)
        cfg["method"]["name"] = run.method
        cfg["run"] = {
            "preset": self.name,
            "experiment": run.experiment,
            "dataset": run.dataset,
            "method": run.method,
            "seed": run.seed,
        }
        return cfg

    def _knob_settings(
        self, path: KnobPath, method: str, fair_method: str, step: knob_paths.Step, seed: int, fold: int | None
    ) -> dict:
        """A step's settings for one seed (and fold model): the paper's recipe, the moved knobs'
        settings from the fair recipe, the preset's settings for the experiment, the fold."""
        paper, fair = self._knob_ends(path.recipe.paper_run.experiment, path.dataset, method, fair_method)
        cfg = plain_copy(paper)
        specs = {k.name: k for k in knob_recipes.catalogue(self).knobs}
        for name in step.moved:
            for key in specs[name].settings:
                _set(cfg, key, plain_copy(_get(fair, key)))
        own = self._subset(path.experiment).get("train")
        if own:  # the preset's settings for the knob experiment alone (a shrunk path), on every step
            cfg = deep_merge(cfg, own)
        if self._moves(path, step, "folds"):
            folds = self.knob_folds
            index = fold if fold is not None else seed % folds
            cfg["data"]["fold"] = {
                "splits": self.fair_splits(path.dataset, folds),
                "index": index,
                "of": folds,
                "scored_on": "test_half",
            }
            if not self._moves(path, step, "selection") and self._selects_on_test(path):
                cfg["data"]["fold"]["epochs_scored_on"] = "test_half"  # the paper's choice of epoch, kept
        store = self.store(path.dataset, cfg["input"]["resize"])
        cfg["data"].pop("store", None)
        if store:
            cfg["data"]["store"] = store
        cfg["seed"] = seed
        cfg["method"]["name"] = cfg["run"] = None  # the run's own, set by `_resolve_knob`
        return cfg

    def _knob_ends(self, source: str, dataset: str, method: str, fair_method: str) -> tuple[dict, dict]:
        """The resolved paper and fair recipes of a method on a dataset (shared: not to be changed)."""
        cache = self.__dict__.setdefault("_knob_ends_cache", {})
        key = (source, dataset, method, fair_method)
        if key not in cache:
            cache[key] = (
                self.resolved(Run(source, dataset, method, 0)),
                self.resolved(Run(knob_recipes.FAIR, dataset, fair_method, 0)),
            )
        return cache[key]

    # --- the steps' inputs and specs ----------------------------------------------------------

    def split_inputs(self, run: Run) -> list[str]:
        """The fold split file a run trains on (none for a run on the whole training half: every
        run outside knob experiments)."""
        if not self.is_knobs(run.experiment):
            return []
        fold = self.resolved(run)["data"].get("fold")
        return [fold["splits"]] if fold else []

    def knob_run_of(
        self, path: KnobPath, method: str, fair_method: str, step: knob_paths.Step, seed: int, fold: int = 0
    ) -> Run:
        """The run that trains a step for one seed: its own, the fold run `fold` of a step that joins
        its folds, or its twin's fold `seed mod folds` (`knob_twin`)."""
        twin = self.knob_twin(path, method, fair_method, step)
        if twin is not None:
            step, fold = twin, seed % self.knob_folds
        name = self.knob_step_name(path, method, step)
        if self._moves(path, step, "evaluation"):
            name += f".fold{fold}"
        return Run(path.experiment, path.dataset, name, seed)

    def knob_result(self, path: KnobPath, method: str, fair_method: str, step: knob_paths.Step, seed: int) -> str:
        """The file holding a step's test numbers for one seed."""
        if self._moves(path, step, "evaluation"):
            name = self.knob_step_name(path, method, step)
            return f"results/{self.name}/{path.experiment}/{path.dataset}/{name}/seed{seed}/concatenated.json"
        return f"{self.knob_run_of(path, method, fair_method, step, seed).path(self.name)}/metrics.json"

    def knob_fold_dirs(self, experiment: str, dataset: str, name: str, seed: int) -> list[str]:
        """The fold runs whose models a concatenated step joins, in fold order."""
        cache = self.__dict__.setdefault("_knob_fold_dirs", {})
        if experiment not in cache:
            joined: dict = {}
            for run, info in sorted(self.knob_run_index(experiment).items(), key=lambda item: item[1].fold or 0):
                if info.fold is not None:
                    key = (run.dataset, run.method.rpartition(".fold")[0], run.seed)
                    joined.setdefault(key, []).append(run.path(self.name))
            cache[experiment] = joined
        found = cache[experiment].get((dataset, name, seed))
        if not found:
            raise ConfigError(f"preset {self.name} has no fold runs of {experiment}/{dataset}/{name}/seed{seed}")
        return found

    def knob_seeds(self, experiment: str) -> list[int]:
        return sorted({run.seed for run in self.knob_run_index(experiment)})

    def _knob_tuned(self, experiment: str) -> list[tuple[str, str]]:
        """(dataset, fair method) whose tuned result suite.fair gives in this preset (the paths' last step)."""
        fair = set(self.fair_pairs(knob_recipes.FAIR)) if knob_recipes.FAIR in self.experiment_ids else set()
        return sorted({(p.dataset, m) for p in self.knob_paths(experiment) for _, m in p.methods} & fair)


def _text(value) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)


def _get(tree: dict, key: str):
    for part in key.split("."):
        tree = tree[part]
    return tree


def _set(tree: dict, key: str, value) -> None:
    *parents, last = key.split(".")
    for part in parents:
        tree = tree[part]
    tree[last] = value
