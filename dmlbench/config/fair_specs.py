"""The jobs of fair experiments (`kind: fair`, `suite.fair`) and the specs their steps read (a
part of `Plan`). Per method × dataset: the split file (shared by the dataset), ⌈`trials` /
`parallel`⌉ search rounds (one GPU job each: ask its `parallel` trial slots, train their `folds`
fold trainings one after another, tell), one best job, `repetitions` final repetitions (one GPU
job each: its `folds` fold trainings), one summary; per experiment one aggregate job. A round
starts once the round before was told, and asks its slots in order: slot t is asked after slot
t − 1 and after slot t − `parallel` was told, each seeing the results of those before it. Every
trial trains with seed `SEARCH_SEED`; final repetition r with `final_seed(r)`, a seed no trial
used, so no repetition repeats the winning trial. A round's and a repetition's rerun trigger is
the fingerprint of the fold trainings' settings (`fair_fingerprint`), their specs follow from it.
"""

from __future__ import annotations

from pathlib import Path

from dmlbench.config.fair_jobs import FairJobs, part
from dmlbench.config.run import FairRun
from dmlbench.fair import space as spaces
from dmlbench.training import run_folder

FAIR_KEYS = {
    "folds": 2,
    "trials": 1,
    "parallel": 1,
    "repetitions": 2,
    "rounds_per_job": 1,
    "repetitions_per_job": 1,
}  # each setting and its least value
SEARCH_SEED = 0  # the seed of every search trial


def final_seed(repetition: int) -> int:
    """The seed of final repetition `repetition`: never the search's."""
    return SEARCH_SEED + 1 + int(repetition)


class FairSpecs(FairJobs):
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
                out += [
                    FairRun(key, dataset, method, SEARCH_SEED, "search", t, k)
                    for t in range(s["trials"])
                    for k in range(s["folds"])
                ]
                out += [
                    FairRun(key, dataset, method, final_seed(r), "final", r, k)
                    for r in range(s["repetitions"])
                    for k in range(s["folds"])
                ]
        return out

    def fair_rounds(self, experiment: str) -> int:
        """The search's rounds: `parallel` trial slots each (the last may hold fewer)."""
        s = self.fair_settings(experiment)
        return -(-s["trials"] // s["parallel"])

    def fair_round_slots(self, experiment: str, round_index) -> list[int]:
        s = self.fair_settings(experiment)
        return part(
            int(round_index),
            s["parallel"],
            s["trials"],
            f"{experiment} has no search round",
            f"in preset {self.name}",
            "trial slots",
        )

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

    def fair_round_marker(self, experiment, dataset, method, round_index) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/search/round{round_index}.json"

    def fair_repetition_marker(self, experiment, dataset, method, repetition) -> str:
        return f"{self.fair_folder(experiment, dataset, method)}/final/rep{repetition}/folds.json"

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
            cache[experiment, dataset, method] = self.resolved(FairRun(experiment, dataset, method, 0))
        return cache[experiment, dataset, method]

    def fair_round_runs(self, experiment, dataset, method, round_index) -> list[str]:
        """The run folders of a round's fold trainings."""
        folds = self.fair_settings(experiment)["folds"]
        return [
            FairRun(experiment, dataset, method, SEARCH_SEED, "search", t, k).path(self.name)
            for t in self.fair_round_slots(experiment, round_index)
            for k in range(folds)
        ]

    def fair_repetition_runs(self, experiment, dataset, method, repetition) -> list[str]:
        folds = self.fair_settings(experiment)["folds"]
        return [
            FairRun(experiment, dataset, method, final_seed(int(repetition)), "final", int(repetition), k).path(
                self.name
            )
            for k in range(folds)
        ]

    def _fold_job(self, run: FairRun) -> dict:
        folder = run.path(self.name)
        return {
            "run_dir": folder,
            "output": f"{folder}/validation.json",
            "test_output": f"{folder}/test.npz",
            "run": run_folder.numbers_and_side(self._fair_settings_shared(run))[0],
        }

    def _space_json(self, method: str) -> dict:
        spaces_json = self.__dict__.setdefault("_fair_spaces_json", {})
        if method not in spaces_json:
            spaces_json[method] = spaces.to_json(self.fair_space(method))
        return spaces_json[method]

    def _fold_data_inputs(self, experiment, dataset, method) -> list[str]:
        folds = self.fair_settings(experiment)["folds"]
        store = self._fair_base(experiment, dataset, method)["data"].get("store")
        # the split file and the store are made from the manifest: it is not named beside them
        return [self.fair_splits(dataset, folds), *([f"{store}/store.json"] if store else [])]

    def fair_embedding_dims(self, experiment: str) -> list[int]:
        """The embedding sizes of the experiment's fold trainings (one, unless a dataset changes it)."""
        return sorted(
            {self._fair_base(experiment, d, m)["model"]["embedding_dim"] for d, m in self.fair_pairs(experiment)}
        )
