"""The jobs of fair experiments (`kind: fair`, `suite.fair`) and the specs their steps read (a
part of `Plan`). Per method × dataset: the split file (shared by the dataset), `trials` ask jobs,
`trials` × `folds` fold trainings, `trials` tell jobs, one best job, `repetitions` × `folds`
final fold trainings, one summary; per experiment one aggregate job. Trial slot t asks after slot
t − 1 has asked and slot t − `parallel` has been told, so `parallel` trials run at once, each
seeing the results of those before it. Every trial trains with seed `SEARCH_SEED`; final repetition
r with `final_seed(r)`, a seed no trial used, so no repetition repeats the winning trial.
"""

from __future__ import annotations

from pathlib import Path

from dmlbench.config import fair_catalogue
from dmlbench.config.run import FairRun
from dmlbench.errors import ConfigError
from dmlbench.fair import space as spaces

FAIR_KEYS = {"folds": 2, "trials": 1, "parallel": 1, "repetitions": 2}  # each setting and its least value
SEARCH_SEED = 0  # the seed of every search trial


def final_seed(repetition: int) -> int:
    """The seed of final repetition `repetition`: never the search's."""
    return SEARCH_SEED + 1 + int(repetition)


class FairSpecs:
    """Paths and specs of the fair protocol's steps."""

    def is_fair(self, experiment: str) -> bool:
        return self.experiments[experiment].get("kind") == "fair"

    def fair_settings(self, experiment: str) -> dict:
        """folds, trials, parallel and repetitions: the experiment's, with the preset's subset over them."""
        return {**self.experiments[experiment]["fair"], **(self._subset(experiment).get("fair") or {})}

    def fair_methods(self, experiment: str) -> list[str]:
        subset = self._subset(experiment).get("methods")
        return [m for m in self.experiments[experiment]["methods"] if subset is None or m in subset]

    def fair_pairs(self, experiment: str) -> list[tuple[str, str]]:
        """(dataset, method) of the experiment in this preset."""
        return [(d, m) for d in self.datasets_of(experiment) for m in self.fair_methods(experiment)]

    def fair_runs(self, experiment: str | None = None) -> list[FairRun]:
        """Every fold training of the chosen fair experiments (search trials, then final repetitions)."""
        out = []
        for key in [experiment] if experiment else self.chosen_ids:
            if not self.is_fair(key):
                continue
            s = self.fair_settings(key)
            for dataset, method in self.fair_pairs(key):
                out += [FairRun(key, dataset, method, SEARCH_SEED, "search", t, k)
                        for t in range(s["trials"]) for k in range(s["folds"])]
                out += [FairRun(key, dataset, method, final_seed(r), "final", r, k)
                        for r in range(s["repetitions"]) for k in range(s["folds"])]
        return out

    def find_fair_run(self, experiment, dataset, method, stage, index, fold) -> FairRun:
        seed = SEARCH_SEED if stage == "search" else final_seed(index)
        run = FairRun(experiment, dataset, method, seed, stage, int(index), int(fold))
        if not hasattr(self, "_fair_run_set"):
            self._fair_run_set = set(self.fair_runs())
        if run not in self._fair_run_set:
            raise ConfigError(f"preset {self.name} has no fair run {run}")
        return run

    # --- paths ------------------------------------------------------------------------------

    def fair_splits(self, dataset: str, folds: int) -> str:
        """The split file beside the manifest training reads."""
        return f"{Path(self.manifest(dataset)).parent}/fair_folds{folds}.csv"

    def fair_folder(self, experiment: str, dataset: str, method: str) -> str:
        return FairRun(experiment, dataset, method, 0).folder(self.name)

    def fair_params(self, experiment, dataset, method, slot) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/search/trial{slot}/params.json"

    def fair_result(self, experiment, dataset, method, slot) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/search/trial{slot}/result.json"

    def fair_best(self, experiment, dataset, method) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/search/best.json"

    def fair_summary(self, experiment, dataset, method) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/final/summary.json"

    # --- the steps' inputs and specs ----------------------------------------------------------

    def fair_space(self, method: str) -> spaces.Space:
        cache = self.__dict__.setdefault("_fair_spaces", {})
        if method not in cache:
            cache[method] = spaces.parse(method, self.methods[method])
        return cache[method]

    def _fair_base(self, experiment: str, dataset: str, method: str) -> dict:
        """The settings of the method's first fold training (shared: not to be changed)."""
        cache = self.__dict__.setdefault("_fair_first", {})
        if (experiment, dataset, method) not in cache:
            cache[experiment, dataset, method] = self.resolve(FairRun(experiment, dataset, method, 0))
        return cache[experiment, dataset, method]

    def fair_ask_inputs(self, experiment, dataset, method, slot) -> list[str]:
        slot, parallel = int(slot), self.fair_settings(experiment)["parallel"]
        out = [self.fair_params(experiment, dataset, method, slot - 1)] if slot > 0 else []
        if slot >= parallel:
            out.append(self.fair_result(experiment, dataset, method, slot - parallel))
        return out

    def fair_ask_spec(self, experiment, dataset, method, slot) -> dict:
        space = self.fair_space(method)
        return {"journal": f"{self.fair_folder(experiment, dataset, method)}/search/study.journal",
                "study": f"{experiment}/{dataset}/{method}", "slot": int(slot),
                "space": spaces.to_json(space),
                "paper": spaces.paper_setting(space, self._fair_base(experiment, dataset, method)),
                "run": self._fair_base(experiment, dataset, method)}  # with the space: the study's fingerprint

    def fair_run_spec(self, run: FairRun) -> dict:
        """The fold training's settings and its method's space (shared parts: to be serialised, not changed)."""
        spaces_json = self.__dict__.setdefault("_fair_spaces_json", {})
        if run.method not in spaces_json:
            spaces_json[run.method] = spaces.to_json(self.fair_space(run.method))
        return {"run": self._fair_settings_shared(run), "space": spaces_json[run.method]}

    def fair_run_inputs(self, run: FairRun) -> list[str]:
        parameters = (self.fair_params(run.experiment, run.dataset, run.method, run.index)
                      if run.stage == "search" else self.fair_best(run.experiment, run.dataset, run.method))
        folds = self.fair_settings(run.experiment)["folds"]
        store = self._fair_base(run.experiment, run.dataset, run.method)["data"].get("store")
        return [parameters, self.manifest(run.dataset), self.fair_splits(run.dataset, folds),
                *([f"{store}/store.json"] if store else [])]

    def fair_tell_inputs(self, experiment, dataset, method, slot) -> list[str]:
        folds = self.fair_settings(experiment)["folds"]
        return [f"{FairRun(experiment, dataset, method, 0, 'search', int(slot), k).path(self.name)}/validation.json"
                for k in range(folds)]

    def fair_best_inputs(self, experiment, dataset, method) -> list[str]:
        return [self.fair_result(experiment, dataset, method, t)
                for t in range(self.fair_settings(experiment)["trials"])]

    def fair_summary_inputs(self, experiment, dataset, method) -> list[str]:
        s = self.fair_settings(experiment)
        return [f"{FairRun(experiment, dataset, method, final_seed(r), 'final', r, k).path(self.name)}/test.npz"
                for r in range(s["repetitions"]) for k in range(s["folds"])]

    def fair_summary_spec(self, experiment, dataset, method) -> dict:
        s = self.fair_settings(experiment)
        return {"method": method, "dataset": dataset, "folds": s["folds"], "repetitions": s["repetitions"],
                "ks": self._fair_base(experiment, dataset, method)["eval"]["ks"]}

    def fair_aggregate_inputs(self, experiment: str) -> list[str]:
        return [path for d, m in self.fair_pairs(experiment)
                for path in (self.fair_summary(experiment, d, m), self.fair_best(experiment, d, m))]

    def fair_aggregate_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        methods = self.fair_methods(experiment)
        return {"experiment": experiment, "title": exp.get("title", experiment), "toy_data": self.toy_data,
                "settings": self.fair_settings(experiment), "datasets": self.datasets_of(experiment),
                "methods": {m: {"label": self.methods[m].get("label", m), "paper": self.methods[m].get("paper"),
                                "space": self.fair_space(m).describe()} for m in methods},
                "papers": dict(self.papers),
                "paper_recall": fair_catalogue.paper_recall_at_1(self, experiment, self.datasets_of(experiment)),
                "no_paper_number": fair_catalogue.no_paper_number(self, experiment),
                "necessities": {m: needs for m, needs in (exp.get("necessities") or {}).items() if m in methods},
                "omitted": {self.methods[m].get("label", m): why for m, why in (exp.get("omitted") or {}).items()},
                "embedding_dims": self.fair_embedding_dims(experiment),
                "epoch_caps": sorted({self._fair_base(experiment, d, m)["epochs"] for d, m in self.fair_pairs(experiment)}),
                "folder": self.fair_folder(experiment, "DATASET", "METHOD")}

    def fair_embedding_dims(self, experiment: str) -> list[int]:
        """The embedding sizes of the experiment's fold trainings (one, unless a dataset changes it)."""
        return sorted({self._fair_base(experiment, d, m)["model"]["embedding_dim"] for d, m in self.fair_pairs(experiment)})
