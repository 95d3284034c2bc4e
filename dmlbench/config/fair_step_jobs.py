"""What the Snakemake rules ask of a plan for the fair protocol's steps (a part of `Jobs`): a search
job's and a final job's spec, inputs and rerun trigger, the best, summary and aggregate steps'."""

from __future__ import annotations

from dmlbench.config import fair_catalogue
from dmlbench.config.fair_jobs import _compact
from dmlbench.config.fair_specs import SEARCH_SEED, final_seed
from dmlbench.config.run import FairRun
from dmlbench.core.errors import ConfigError
from dmlbench.data.datasets import DATASETS
from dmlbench.fair import space as spaces
from dmlbench.training import run_folder


class FairStepJobs:
    """The fair protocol's steps' inputs, triggers and specs."""

    def fair_round_trigger(self, experiment, dataset, method, round_index) -> str:
        """The rerun trigger of a search job: the fold trainings' fingerprint and its round's slots."""
        slots = self.fair_round_slots(experiment, round_index)
        return f"{self.fair_fingerprint(experiment, dataset, method)} slots {','.join(map(str, slots))}"

    def fair_group_trigger(self, experiment, dataset, method, group) -> str:
        """The rerun trigger of a final job: the fingerprint and its last repetition, whose record is
        its output (whichever `repetitions_per_job` cut the repetitions)."""
        last = self.fair_group_repetitions(experiment, group)[-1]
        return f"{self.fair_fingerprint(experiment, dataset, method)} repetition {last}"

    def fair_round_job(self, experiment, dataset, method, round_index) -> dict:
        """A search job: its round, with the file that records what its slots were told (the job's
        output); the settings the folds share once (`base`), each fold's as changes to them."""
        spec = self.fair_round_spec(experiment, dataset, method, round_index)
        base = spec["ask"]["run"]
        return {
            "ask": spec["ask"],
            "space": spec["space"],
            "base": base,
            "output": self.fair_round_marker(experiment, dataset, method, round_index),
            "trials": [{**t, "folds": [_compact(base, f) for f in t["folds"]]} for t in spec["trials"]],
        }

    def fair_group_spec(self, experiment, dataset, method, group) -> dict:
        """A final job: its repetitions, each with the file that records its folds' results; the
        settings the folds share once (`base`), each fold's as changes to them."""
        base = run_folder.numbers_and_side(self._fair_base(experiment, dataset, method))[0]
        return {
            "space": self._space_json(method),
            "base": base,
            "repetitions": [
                {
                    "output": self.fair_repetition_marker(experiment, dataset, method, r),
                    "folds": [
                        _compact(base, f) for f in self.fair_repetition_spec(experiment, dataset, method, r)["folds"]
                    ],
                }
                for r in self.fair_group_repetitions(experiment, group)
            ],
        }

    def fair_round_inputs(self, experiment, dataset, method, round_index) -> list[str]:
        """The data, and the round before (told: the sequencing of the search)."""
        r = int(round_index)
        before = [self.fair_round_marker(experiment, dataset, method, r - 1)] if r > 0 else []
        return before + self._fold_data_inputs(experiment, dataset, method)

    def fair_side(self, experiment, dataset, method) -> dict:
        """The side settings (tracking, keep, loader) of the method's fold trainings: no rerun trigger."""
        return run_folder.numbers_and_side(self._fair_base(experiment, dataset, method))[1]

    def fair_fingerprint(self, experiment, dataset, method) -> str:
        """What decides the numbers of the method's fold trainings (their shared settings and the
        search space): the rerun trigger of its rounds and repetitions, whose specs follow from it."""
        cache = self.__dict__.setdefault("_fair_fingerprints", {})
        if (experiment, dataset, method) not in cache:
            numbers = run_folder.numbers_and_side(self._fair_base(experiment, dataset, method))[0]
            cache[experiment, dataset, method] = run_folder.fingerprint(
                {"run": numbers, "space": self._space_json(method)}
            )
        return cache[experiment, dataset, method]

    def fair_ask_spec(self, experiment, dataset, method, slot) -> dict:
        """What slot `slot` of the method's search is asked with (`study.ask`)."""
        base = self._fair_base(experiment, dataset, method)
        folder = self.fair_folder(experiment, dataset, method)
        return {
            "journal": f"{folder}/search/study.journal",
            "study": f"{experiment}/{dataset}/{method}",
            "space": self._space_json(method),
            "paper": spaces.paper_setting(self.fair_space(method), base),
            "run": base,
            "slot": slot,
        }  # the space and the run: the study's fingerprint

    def fair_round_spec(self, experiment, dataset, method, round_index) -> dict:
        """A search round: what its slots ask with and the folds each slot trains."""
        folds = self.fair_settings(experiment)["folds"]
        ask = self.fair_ask_spec(experiment, dataset, method, None)
        ask = {**ask, "run": run_folder.numbers_and_side(ask["run"])[0]}  # the side settings come apart
        trials = [
            {
                "slot": t,
                "params": self.fair_params(experiment, dataset, method, t),
                "result": self.fair_result(experiment, dataset, method, t),
                "folds": [
                    self._fold_job(FairRun(experiment, dataset, method, SEARCH_SEED, "search", t, k))
                    for k in range(folds)
                ],
            }
            for t in self.fair_round_slots(experiment, round_index)
        ]
        return {"ask": ask, "space": ask["space"], "trials": trials}

    def fair_repetition_spec(self, experiment, dataset, method, repetition) -> dict:
        """A final repetition: its folds, trained with the best parameters."""
        r, s = int(repetition), self.fair_settings(experiment)
        if not 0 <= r < s["repetitions"]:
            raise ConfigError(
                f"{experiment} has no final repetition {r} in preset {self.name} ({s['repetitions']} repetitions)"
            )
        return {
            "space": self._space_json(method),
            "folds": [
                self._fold_job(FairRun(experiment, dataset, method, final_seed(r), "final", r, k))
                for k in range(s["folds"])
            ],
        }

    def fair_repetition_inputs(self, experiment, dataset, method) -> list[str]:
        return [self.fair_best(experiment, dataset, method), *self._fold_data_inputs(experiment, dataset, method)]

    def fair_best_inputs(self, experiment, dataset, method) -> list[str]:
        return [self.fair_round_marker(experiment, dataset, method, r) for r in range(self.fair_rounds(experiment))]

    def fair_results(self, experiment, dataset, method) -> list[str]:
        """Every trial's result.json (written by the rounds)."""
        return [
            self.fair_result(experiment, dataset, method, t) for t in range(self.fair_settings(experiment)["trials"])
        ]

    def fair_summary_inputs(self, experiment, dataset, method) -> list[str]:
        return [
            self.fair_group_marker(experiment, dataset, method, g) for g in range(self.fair_final_groups(experiment))
        ]

    def fair_test_embeddings(self, experiment, dataset, method) -> list[str]:
        """The final folds' test.npz, repetition by repetition (written by the repetitions)."""
        s = self.fair_settings(experiment)
        return [
            f"{FairRun(experiment, dataset, method, final_seed(r), 'final', r, k).path(self.name)}/test.npz"
            for r in range(s["repetitions"])
            for k in range(s["folds"])
        ]

    def fair_summary_spec(self, experiment, dataset, method) -> dict:
        s = self.fair_settings(experiment)
        return {
            "method": method,
            "dataset": dataset,
            "folds": s["folds"],
            "repetitions": s["repetitions"],
            "ks": self._fair_base(experiment, dataset, method)["eval"]["ks"],
        }

    def fair_aggregate_inputs(self, experiment: str) -> list[str]:
        return [
            path
            for d, m in self.fair_pairs(experiment)
            for path in (self.fair_summary(experiment, d, m), self.fair_best(experiment, d, m))
        ]

    def fair_aggregate_spec(self, experiment: str) -> dict:
        exp = self.experiments[experiment]
        methods = self.fair_methods(experiment)
        return {
            "experiment": experiment,
            "title": exp.get("title", experiment),
            "toy_data": self.toy_data,
            "own_data": [d for d in self.datasets_of(experiment) if DATASETS.get(d).csv],  # a CSV's real images
            "datasets": self.datasets_of(experiment),
            "methods": {
                m: {
                    "label": self.methods[m].get("label", m),
                    "paper": self.methods[m].get("paper"),
                    "space": self.fair_space(m).describe(),
                }
                for m in methods
            },
            "papers": dict(self.papers),
            "paper_recall": fair_catalogue.paper_recall_at_1(self, experiment, self.datasets_of(experiment)),
            "no_paper_number": fair_catalogue.no_paper_number(self, experiment),
            "necessities": {m: needs for m, needs in (exp.get("necessities") or {}).items() if m in methods},
            "omitted": {self.methods[m].get("label", m): why for m, why in (exp.get("omitted") or {}).items()},
            "embedding_dims": self.fair_embedding_dims(experiment),
            "epoch_caps": sorted({self._fair_base(experiment, d, m)["epochs"] for d, m in self.fair_pairs(experiment)}),
            "folder": self.fair_folder(experiment, "DATASET", "METHOD"),
        }
