"""What a paper's certificate reads (`dmlbench.verdicts.certificate`), from the plan: each of the
paper's experiments with its numbers, claims, margin and test-selected metrics, the runs.csv it
comes from, the manifests' checksum files and the fingerprint of the runs' resolved settings.

A paper is the id prefix of its experiments (`papers.yaml`); the suite's own experiments
(`paper: null`, prefix `suite`) have a certificate of claims alone where they declare claims."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from dmlbench.config import margins, second_wave, seed_spread
from dmlbench.config.loading import printed_numbers
from dmlbench.data.manifest import checksum_path
from dmlbench.core.errors import ConfigError
from dmlbench.core.registry import did_you_mean
from dmlbench.config.step_jobs import paper_label
from dmlbench.evaluation.names import dataset_label, metric_label
from dmlbench.models.names import setting_label
from dmlbench.training.run_folder import fingerprint
from dmlbench.verdicts.claims import per_variant


def paper_of(plan, name: str) -> str:
    """The paper of `name`, a paper id (ms) or an experiment id (ms.t1); unknown names refused."""
    if name in plan.experiments:
        if not _certified(plan, name):
            judged = [k for k in plan.experiments if _paper(plan, k) == _paper(plan, name) and _certified(plan, k)]
            raise ConfigError(
                f"{name} has no printed numbers or claims to judge (a verdict reads a paper's numbers and "
                f"claims; its results are in reports/{plan.name}/{name}/)"
                + (f"; the experiments of {_paper(plan, name)} that have some: {', '.join(judged)}" if judged else "")
            )
        return _paper(plan, name)
    if name in certified_papers(plan, chosen_only=False):
        return name
    known = certified_papers(plan, chosen_only=False) + sorted(plan.experiments)
    raise ConfigError(
        f"unknown paper or experiment {name!r}{did_you_mean(name, known)}; papers with numbers: "
        f"{', '.join(certified_papers(plan, chosen_only=False))}"
    )


def _paper(plan, key: str) -> str:
    return plan.experiments[key].get("paper") or key.split(".")[0]


def _certified(plan, key: str) -> bool:
    """Trained experiments with printed numbers or claims of their own."""
    exp = plan.experiments[key]
    return bool(exp.get("reported") or exp.get("claims")) and not plan.is_analysis(key) and not plan.is_fair(key)


def certified_papers(plan, chosen_only: bool = True) -> list[str]:
    """Papers with printed numbers or claims of their own; with `chosen_only`, those the preset runs
    a part of."""
    keys = [k for k in plan.experiments if _certified(plan, k) and (not chosen_only or k in plan.experiment_ids)]
    return [p for p in plan.papers if any(_paper(plan, k) == p for k in keys)]


def _keys(plan, paper: str) -> list[str]:
    return [k for k in plan.experiments if _paper(plan, k) == paper and _certified(plan, k)]


def aggregated(plan, paper: str, root: Path = Path(".")) -> set[str]:
    """The paper's experiments whose results are aggregated under `root`, whichever invocation ran
    them (`experiments=[…]` narrows one): a certificate judges them whatever this one chose."""
    return {key for key in _keys(plan, paper) if (root / f"reports/{plan.name}/{key}/runs.csv").exists()}


def certificate_spec(plan, paper: str, found: set[str] = frozenset()) -> dict:
    """What the certificate of `paper` reads: the experiments this preset runs, and those of
    `found` (`aggregated`), each with the fingerprint of every run's settings (a row of its
    runs.csv made with other settings is refused, `verdicts.asked`)."""
    keys = _keys(plan, paper)
    if not keys:
        raise ConfigError(f"paper {paper!r} has no experiment with numbers or claims of its own in the catalogue")
    ran = [k for k in keys if k in plan.experiment_ids or k in found]
    design = second_wave.design(plan)
    runs = [run for key in ran for run in plan.runs(key)]
    digests = sorted(fingerprint(plan.resolved(run)) for run in runs)  # its own, however it was trained
    experiments = [
        {
            "id": key,
            "title": plan.title(key),
            "ran": key in ran,
            "runs": f"reports/{plan.name}/{key}/runs.csv",
            "fingerprints": {
                f"{run.dataset}/{run.method}/seed{run.seed}": _one_or_all(plan.accepted_fingerprints(run))
                for run in plan.runs(key)
            },
            "selected": list((plan.experiments[key].get("table") or {}).get("test_selected") or []),
            "margin": margins.of(plan.config_dir, plan.experiments[key]),
            "seed_sd": _priors(plan, key),
            "reported": printed_numbers(plan.experiments[key].get("reported") or {}),
            "quoted": printed_numbers(plan.experiments[key].get("quoted") or {}),
            # every variant of the catalogue's sweep, run or not: the Holm family is the catalogue's
            "claims": per_variant(plan.experiments[key], list(plan.experiments[key].get("sweep") or {})),
            "names": _names(plan, key),
            **({"wave_one": second_wave.wave_one(plan, key)} if design else {}),
            # look 1's seeds: a verdict decided there stands; a number of one look is judged on them
            **({"wave_one_seeds": second_wave.wave_one_seeds(plan, key)} if design else {}),
        }
        for key in keys
    ]
    return {
        **({"second_wave": design} if design else {}),  # its looks' boundaries (`verdicts.sequential`)
        "paper": paper,
        "title": plan.papers.get(paper, paper),
        "preset": plan.name,
        "fixture_data": plan.toy_data,
        "experiments": experiments,
        "fingerprint": hashlib.sha256(json.dumps(digests).encode()).hexdigest(),
        "checksums": {
            d: str(checksum_path(f"{plan.data_dir}/{d}/manifest.csv")) for d in sorted({run.dataset for run in runs})
        },
    }


def _priors(plan, key: str) -> dict:
    """The prior seed spread of each dataset × metric of the experiment's table (seed_spread.yaml):
    what its claims' power before the data assumes (never the runs' own spread)."""
    exp = plan.experiments[key]
    metrics = (exp.get("table") or {}).get("metrics") or []
    return {d: {m: seed_spread.prior(plan.config_dir, d, m)[0] for m in metrics} for d in exp["datasets"]}


def _names(plan, key: str) -> dict:
    """How the certificate prints an experiment's rows, datasets and metrics: the paper's names
    (its table's labels, else the methods' labels; a swept row with its setting)."""
    exp = plan.experiments[key]
    declared = exp.get("layout") or {}
    methods = {m: paper_label(exp, m) or plan.methods.get(m, {}).get("label", m) for m in exp["methods"]}
    settings = {v: setting_label(v, entry) for v, entry in (exp.get("sweep") or {}).items()}
    swept = {f"{m}@{v}": f"{label} ({settings[v]})" for m, label in methods.items() for v in settings}
    metrics = (exp.get("table") or {}).get("metrics") or []
    return {
        "rows": {**methods, **swept},
        "settings": settings,
        "datasets": {d: (declared.get("datasets") or {}).get(d) or dataset_label(d) for d in exp["datasets"]},
        "metrics": {m: (declared.get("metrics") or {}).get(m) or metric_label(m) for m in metrics},
    }


def certificate_trigger(plan, paper: str) -> str:
    """What decides the certificate, as its rule's rerun trigger: the claims, margins, paper
    numbers and runs' settings of its spec (a changed claim reruns it, as a changed number does)."""
    return hashlib.sha256(json.dumps(certificate_spec(plan, paper), sort_keys=True).encode()).hexdigest()


def certificate_inputs(plan, paper: str) -> list[str]:
    """The runs.csv files a certificate reads (the paper's experiments this preset runs)."""
    return [
        f"reports/{plan.name}/{key}/runs.csv"
        for key in plan.experiment_ids
        if _paper(plan, key) == paper and _certified(plan, key)
    ]


def undecidable_numbers(plan) -> dict[str, tuple[int, int]]:
    """Per experiment the preset trains: (paper numbers it trains with fewer seeds than a verdict
    needs, paper numbers it trains), for those with any: said before training (doctor, preflight)."""
    from dmlbench.verdicts.numbers import MIN_SEEDS

    found = {}
    for key in plan.experiment_ids:
        reported = plan.experiments[key].get("reported") or {}
        seeds: dict[tuple, int] = {}
        for run in plan.runs(key):
            seeds[run.method, run.dataset] = seeds.get((run.method, run.dataset), 0) + 1
        trained = [
            (row, dataset)
            for row, per_dataset in reported.items()
            for dataset, metrics in per_dataset.items()
            for _ in metrics
            if (row, dataset) in seeds
        ]
        few = sum(seeds[pair] < MIN_SEEDS for pair in trained)
        if few:
            found[key] = (few, len(trained))
    return found


def untestable_claims(plan) -> dict[str, tuple[int, int]]:
    """Per experiment the preset trains: (claims a row of which it trains with fewer seeds than a
    test needs, claims whose rows it trains), for those with any. A trend over settings needs no
    second seed (its points are the settings')."""
    from dmlbench.verdicts.claim_kinds import listed
    from dmlbench.verdicts.claims import MIN_SEEDS

    found = {}
    for key in plan.experiment_ids:
        seeds: dict[tuple, int] = {}
        for run in plan.runs(key):
            seeds[run.method, run.dataset] = seeds.get((run.method, run.dataset), 0) + 1
        trained = few = 0
        for claim in per_variant(plan.experiments[key], plan.variants(key)):
            if claim.get("kind") in ("increasing", "decreasing"):
                continue
            suffixes = [f"@{v}" for v in claim.get("variants") or []] or [""]
            rows = (
                [claim["better"] + v for v in suffixes] + [claim["worse"] + v for v in suffixes]
                if "better" in claim
                else [f"{claim['method']}{v}" for v in suffixes]
            )
            counts = [seeds[row, d] for row in rows for d in listed(claim["dataset"]) if (row, d) in seeds]
            trained += bool(counts)
            few += bool(counts) and min(counts) < MIN_SEEDS
        if few:
            found[key] = (few, trained)
    return found


def undecidable_line(plan) -> str | None:
    """One line naming the experiments whose paper numbers cannot reach a verdict, and whose claims
    cannot be tested, at the planned seeds."""
    from dmlbench.verdicts.numbers import MIN_SEEDS

    found, claims = undecidable_numbers(plan), untestable_claims(plan)
    parts = []
    if found:
        few, total = sum(f for f, _ in found.values()), sum(t for _, t in found.values())
        parts.append(
            f"{few} of the {total} paper numbers these experiments train cannot reach a verdict "
            "at the planned "
            f"seeds (fewer than {MIN_SEEDS}: inconclusive whatever the results): "
            + ", ".join(f"{key} {f}/{t}" for key, (f, t) in found.items())
        )
    if claims:
        few, total = sum(f for f, _ in claims.values()), sum(t for _, t in claims.values())
        parts.append(
            f"{few} of the {total} claims these experiments test have a row trained with fewer than "
            f"{MIN_SEEDS} seeds (no test: too few seeds): "
            + ", ".join(f"{key} {f}/{t}" for key, (f, t) in claims.items())
        )
    return "; ".join(parts) or None


def _one_or_all(fingerprints: list[str]) -> str | list[str]:
    """A run's accepted fingerprints as the spec writes them: one as a string, several as a list."""
    return fingerprints[0] if len(fingerprints) == 1 else fingerprints
