"""The second wave (docs/verdicts.md, "The second wave"): the two looks' boundaries, the α they keep,
the seeds planned from the first wave's certificates, and a smoke-sized second wave through Snakemake."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

import processes
from conftest import CONFIG_DIR, REPO, python_env, snakemake_command
from test_scale import planned
from dmlbench.config import second_wave, second_wave_plan, verdict_spec
from dmlbench.config.plan import Plan
from dmlbench.core.errors import ConfigError
from dmlbench.verdicts import certificate, claim_family, numbers, sequential


def test_the_boundaries_are_the_published_pocock_and_obrien_fleming_values():
    """Two equally spaced looks, two-sided α = 0.05 (Jennison & Turnbull, Table 2.1 and 2.3)."""
    assert sequential.boundaries(0.05, 0.5, sequential.POCOCK) == pytest.approx((2.178, 2.178), abs=5e-4)
    assert sequential.boundaries(0.05, 0.5, sequential.OBRIEN_FLEMING) == pytest.approx((2.797, 1.977), abs=5e-4)
    c1, c2 = sequential.boundaries(0.05, 0.5, sequential.OBRIEN_FLEMING)
    assert sequential.second_boundary(0.05, c1, 0.5) == pytest.approx(c2, abs=1e-9)  # look 2 spends the rest
    design = sequential.Design(sequential.OBRIEN_FLEMING, 10)
    assert design.level(0.05, 2, 5, 5) == pytest.approx(2 * 0.00258, abs=1e-4)  # look 1: strict
    assert 0.045 < design.level(0.05, 2, 5, 10) < 0.05  # look 2: nearly the plain test
    assert design.level(0.05, 2, 10, 10) == 0.05  # a first wave at the cap: no second look, the plain test


@pytest.mark.parametrize("spending", sequential.SPENDINGS)
def test_two_looks_keep_alpha_where_the_plain_test_twice_does_not(spending):
    """Under each null (a true gap of exactly −δ, or of δ), a number judged at 5 seeds and, when
    inconclusive, again at 10 (`numbers.decision` at the design's levels) is called *below* at
    most α/2 and *reproduced* at most α of the time over both looks; the plain test twice is not."""
    design, delta, reps = sequential.Design(spending, 10), 1.0, 1500
    rng = np.random.default_rng(70)

    def rate(gap: float, wrong: str, levels) -> float:
        found = 0
        for x in rng.normal(gap, 1.0, size=(reps, 10)):
            first = numbers.decision(x[:5].mean(), x[:5].std(ddof=1), 5, delta, levels)
            last = (
                numbers.decision(x.mean(), x.std(ddof=1), 10, delta, levels) if first == numbers.INCONCLUSIVE else None
            )
            found += wrong in (first, last)
        return found / reps

    tolerance = lambda p: 3 * np.sqrt(p * (1 - p) / reps)  # noqa: E731
    assert rate(-delta, numbers.BELOW, design.number_levels(5)) <= 0.025 + tolerance(0.025)
    assert rate(delta, numbers.REPRODUCED, design.number_levels(5)) <= 0.05 + tolerance(0.05)
    assert rate(delta, numbers.REPRODUCED, numbers.plain) > 0.05 + tolerance(0.05)


SMALL = {
    "preset": "smoke",
    "experiments": ["ms.t1"],
    "subset": {"ms.t1": {"datasets": ["cub"], "methods": ["raw", "ms"], "seeds": [0, 1, 2, 3, 4]}},
}


def _first_wave(root, config: dict, values: dict) -> Plan:
    """A first wave of ms.t1 made by hand (`values`: row → its five seeds' Recall@1) and its certificate."""
    plan = Plan.load(CONFIG_DIR, config)
    rows = [
        {"experiment": "ms.t1", "dataset": "cub", "method": row, "seed": seed, "recall@1": v, "fingerprint": ""}
        for row, seeds in values.items()
        for seed, v in enumerate(seeds)
    ]
    folder = root / "reports/smoke/ms.t1"
    folder.mkdir(parents=True)
    pd.DataFrame(rows).assign(**{"recall@1 (test-selected)": lambda t: t["recall@1"]}).to_csv(folder / "runs.csv")
    spec = verdict_spec.certificate_spec(plan, "ms", verdict_spec.aggregated(plan, "ms", root))
    (root / "reports/smoke/ms").mkdir(parents=True)
    (root / "reports/smoke/ms/certificate.json").write_text(json.dumps(certificate.build(spec, "test", root)))
    return plan


STEPS = np.array([-1.2649, -0.6325, 0.0, 0.6325, 1.2649])  # five seeds of standard deviation 1


@pytest.mark.parametrize("cap", [20, 12])
def test_only_an_inconclusive_number_decidable_within_the_cap_gets_seeds(tmp_path, monkeypatch, cap):
    """raw: tight around the paper's 65.06, reproduced at look 1 already; ms: its spread 0.6 leaves
    it inconclusive at look 1, and 13 or 14 seeds (the cap moves look 1's boundary) decide it at look 2:
    planned with a cap of 20, not 12."""
    monkeypatch.chdir(tmp_path)
    config = {**SMALL, "second_wave": {"max_seeds": cap}}
    plan = _first_wave(tmp_path, config, {"raw": 65.06 + 0.1 * STEPS, "ms": 66.85 + 0.6 * STEPS})
    cert = json.loads((tmp_path / "reports/smoke/ms/certificate.json").read_text())
    t1 = next(e for e in cert["experiments"] if e["id"] == "ms.t1")
    judged = {(x["row"], x["dataset"]): x for x in t1["numbers"] if x["n"]}
    assert judged["raw", "cub"]["verdict"] == numbers.REPRODUCED and judged["raw", "cub"]["look"] == 1
    needed = judged["ms", "cub"]["seeds_needed"]
    assert judged["ms", "cub"]["verdict"] == numbers.INCONCLUSIVE and 12 < needed <= 20 and needed in (13, 14)
    file, cells = second_wave_plan.write(plan, tmp_path)
    assert file == tmp_path / "reports/smoke/second_wave.yaml"
    if cap == 20:
        assert cells == {"ms.t1": {"cub/ms": {"seeds": list(range(5, needed)), "for": ["recall@1 (paper 66.85)"]}}}
    else:
        assert cells == {}
    again = Plan.load(CONFIG_DIR, config)
    assert len(again.runs("ms.t1")) == (10 + needed - 5 if cap == 20 else 10)
    text = file.read_text()
    second_wave_plan.write(again, tmp_path)  # the first wave's certificate again: the same file
    assert file.read_text() == text


def test_under_second_look_claims_a_number_is_judged_once_on_the_first_waves_seeds(tmp_path, monkeypatch):
    """`second_look: claims`: every number gets the plain test's verdict of a plan without a design,
    asks for no seeds, and keeps that verdict when a second wave adds seeds to its cell."""
    monkeypatch.chdir(tmp_path)
    config = {**SMALL, "second_wave": {"max_seeds": 20, "second_look": "claims"}}
    plan = _first_wave(tmp_path, config, {"raw": 65.06 + 0.1 * STEPS, "ms": 66.85 + 1.5 * STEPS})
    judged = lambda cert: [x for e in cert["experiments"] for x in e["numbers"]]  # noqa: E731
    cert = json.loads((tmp_path / "reports/smoke/ms/certificate.json").read_text())
    plain = certificate.build(verdict_spec.certificate_spec(Plan.load(CONFIG_DIR, SMALL), "ms", {"ms.t1"}), "test")
    assert judged(cert) == judged(plain) and not any("look" in x for x in judged(cert))
    assert {x["verdict"] for x in judged(cert) if x["n"]} >= {numbers.INCONCLUSIVE}  # ms: one a second look could move
    _, cells = second_wave_plan.write(plan, tmp_path)
    assert not [why for per in cells.values() for e in per.values() for why in e["for"] if "(paper" in why]
    (tmp_path / "reports/smoke/second_wave.yaml").write_text(
        yaml.safe_dump(
            {"design": second_wave.design(plan), "cells": {"ms.t1": {"cub/ms": {"seeds": [5, 6, 7], "for": ["x"]}}}}
        )
    )
    runs = pd.read_csv(tmp_path / "reports/smoke/ms.t1/runs.csv", index_col=0)
    later = runs[runs["method"] == "ms"].head(3).assign(seed=[5, 6, 7], **{"recall@1": 90.0})
    later = later.assign(**{"recall@1 (test-selected)": 90.0})  # far off: read, it would move the number
    pd.concat([runs, later]).to_csv(tmp_path / "reports/smoke/ms.t1/runs.csv")
    second = Plan.load(CONFIG_DIR, config)
    assert len(second.runs("ms.t1")) == 13
    again = certificate.build(verdict_spec.certificate_spec(second, "ms", {"ms.t1"}), "test")
    assert judged(again) == judged(cert)


def _second_wave_by_hand(root, plan, config: dict, cells: list, value) -> Plan:
    """Seeds 5-7 added to `cells` ('dataset/row') by hand, each run at `value` (or `value[cell]`;
    far off: read, they would move any verdict), and the plan that trains them."""
    extra = {cell: {"seeds": [5, 6, 7], "for": ["by hand"]} for cell in cells}
    (root / "reports/smoke/second_wave.yaml").write_text(
        yaml.safe_dump({"design": second_wave.design(plan), "cells": {"ms.t1": extra}})
    )
    runs = pd.read_csv(root / "reports/smoke/ms.t1/runs.csv", index_col=0)
    at = lambda cell: value[cell] if isinstance(value, dict) else value  # noqa: E731
    later = pd.concat(
        runs[(runs["dataset"] + "/" + runs["method"]) == cell]
        .head(3)
        .assign(seed=[5, 6, 7], **{"recall@1": at(cell), "recall@1 (test-selected)": at(cell)})
        for cell in cells
    )
    pd.concat([runs, later]).to_csv(root / "reports/smoke/ms.t1/runs.csv")
    return Plan.load(CONFIG_DIR, config)


def test_a_number_and_a_claim_decided_at_look_one_keep_their_verdicts_after_a_second_wave(tmp_path, monkeypatch):
    """raw reproduced and "VTHM improves raw" holding at look 1 (ms 8 points above raw, tight):
    seeds the second wave adds to both cells, reversed, change neither (a test that stopped at
    look 1 is not judged again), and the claim enters Holm at look 2 as rejected."""
    monkeypatch.chdir(tmp_path)
    config = {**SMALL, "second_wave": {"max_seeds": 20}}
    plan = _first_wave(tmp_path, config, {"raw": 65.06 + 0.1 * STEPS, "ms": 73.0 + 0.1 * np.roll(STEPS, 2)})
    cert = json.loads((tmp_path / "reports/smoke/ms/certificate.json").read_text())
    t1 = next(e for e in cert["experiments"] if e["id"] == "ms.t1")
    number = next(x for x in t1["numbers"] if (x["row"], x["dataset"]) == ("raw", "cub"))
    claim = next(c for c in t1["claims"] if c["id"] == "vthm-improves-raw")
    assert (number["verdict"], number["look"]) == (numbers.REPRODUCED, 1)
    assert claim["verdict_on_parts_run"] in claim_family.REJECTED and claim["look"] == 1  # on cub, of 4 datasets
    second = _second_wave_by_hand(tmp_path, plan, config, ["cub/raw", "cub/ms"], 50.0)
    assert len(second.runs("ms.t1")) == 16
    again = json.loads(json.dumps(certificate.build(verdict_spec.certificate_spec(second, "ms", {"ms.t1"}), "test")))
    t1_again = next(e for e in again["experiments"] if e["id"] == "ms.t1")
    assert next(x for x in t1_again["numbers"] if (x["row"], x["dataset"]) == ("raw", "cub")) == number
    assert next(c for c in t1_again["claims"] if c["id"] == "vthm-improves-raw") == claim
    ms_number = next(x for x in t1_again["numbers"] if (x["row"], x["dataset"]) == ("ms", "cub"))
    assert (ms_number["verdict"], ms_number["n"], ms_number["look"]) == (numbers.ABOVE, 5, 1)  # decided, stopped


def test_a_claim_no_second_look_decides_has_one_look_at_the_plain_test(tmp_path, monkeypatch):
    """ "RAW+VTHM beats RAW+DW" (paper gain 0.79) reaches power 0.8 at no second look within a cap
    of 8, known before the data: it gets the plain test at α on its first wave's seeds (the
    verdict of a plan without a design, where look 1's strict boundary would leave it open), asks
    for no seeds, and keeps that test when a second wave adds far-off seeds to both its cells; a
    claim a second look can decide ("no positive impact of DW", power 0.8 at 6) keeps its look 1."""
    monkeypatch.chdir(tmp_path)
    small = {**SMALL, "subset": {"ms.t1": {**SMALL["subset"]["ms.t1"], "methods": ["ms", "raw_dw", "raw"]}}}
    config = {**small, "second_wave": {"max_seeds": 8}}
    values = {"ms": 66.85 + 0.4 * STEPS, "raw_dw": 65.67 + 0.0 * STEPS, "raw": 65.06 + 0.4 * np.roll(STEPS, 1)}
    plan = _first_wave(tmp_path, config, values)
    claims = lambda cert: {c["id"]: c for e in cert["experiments"] for c in e["claims"]}  # noqa: E731
    cert = claims(json.loads((tmp_path / "reports/smoke/ms/certificate.json").read_text()))
    plain = claims(certificate.build(verdict_spec.certificate_spec(Plan.load(CONFIG_DIR, small), "ms", {"ms.t1"}), "t"))
    one = cert["vthm-over-dw"]
    assert one["one_look"] and "look" not in one
    for key in ("p", "power", "verdict", "verdict_on_parts_run"):  # Holm's other steps differ: the others' looks
        assert one[key] == plain["vthm-over-dw"][key], key
    assert one["verdict_on_parts_run"] in claim_family.REJECTED  # on cub, of its 4 datasets
    design = sequential.Design(sequential.OBRIEN_FLEMING, 8)
    assert one["p"] * 0.05 / design.level(0.05, 2, 5, 5) > 0.05 / 10  # look 1's level: no Holm step of 2 in 11
    assert cert["raw-dw-no-positive-impact"]["look"] == 1 and "one_look" not in cert["raw-dw-no-positive-impact"]
    _, cells = second_wave_plan.write(plan, tmp_path)
    assert not [why for per in cells.values() for e in per.values() for why in e["for"] if "vthm-over-dw" in why]
    wide = tmp_path / "wide"  # its gap lost in a spread of 3 at look 1: not significant; wave 2, 40 points apart
    wide.mkdir()
    monkeypatch.chdir(wide)
    plan = _first_wave(wide, config, {**values, "ms": 66.85 + 3.0 * STEPS})
    first = claims(json.loads((wide / "reports/smoke/ms/certificate.json").read_text()))["vthm-over-dw"]
    assert first["one_look"] and first["verdict_on_parts_run"] not in claim_family.DECIDED
    second = _second_wave_by_hand(wide, plan, config, ["cub/ms", "cub/raw_dw"], {"cub/ms": 90.0, "cub/raw_dw": 50.0})
    again = claims(certificate.build(verdict_spec.certificate_spec(second, "ms", {"ms.t1"}), "test"))
    assert len(second.runs("ms.t1")) == 21
    assert (again["vthm-over-dw"]["p"], again["vthm-over-dw"]["verdict"]) == (first["p"], first["verdict"])


def test_an_underpowered_claim_gets_the_fewest_seeds_of_power_0_8_on_both_its_rows(tmp_path, monkeypatch):
    """dro's "DRO-TopK_B improves Recall@1 on CUB by 2.4 over MS" at three seeds (a family of
    dro's claims, α/m): underpowered at look 1; both rows get the same new seeds, at least as many
    as its power before the data at look 2's level first reaches 0.8, within the cap."""
    monkeypatch.chdir(tmp_path)
    rows = {"dro_topk_b": (0.0, [0.3, -0.3, 0.0]), "ms": (-2.4, [-0.3, 0.0, 0.3])}  # the paper's gain, paired noise
    config = {
        "preset": "smoke",
        "experiments": ["dro.t1"],
        "subset": {"dro.t1": {"datasets": ["cub"], "methods": ["dro_topk_b", "ms"], "seeds": [0, 1, 2]}},
        "second_wave": {"max_seeds": 10},
    }
    plan = Plan.load(CONFIG_DIR, config)
    printed = plan.experiments["dro.t1"]["reported"]["dro_topk_b"]["cub"]  # the paper quotes its MS row
    table = [
        {"experiment": "dro.t1", "dataset": "cub", "method": row, "seed": seed, "fingerprint": ""}
        | {m: float(v) + shift + noise[seed] for m, v in printed.items()}
        for row, (shift, noise) in rows.items()
        for seed in range(3)
    ]
    folder = tmp_path / "reports/smoke/dro.t1"
    folder.mkdir(parents=True)
    frame = pd.DataFrame(table)
    frame.assign(**{m + numbers.SELECTED: frame[m] for m in printed}).to_csv(folder / "runs.csv")
    spec = verdict_spec.certificate_spec(plan, "dro", verdict_spec.aggregated(plan, "dro", tmp_path))
    cert = certificate.build(spec, "test", tmp_path)
    (tmp_path / "reports/smoke/dro").mkdir(parents=True)
    (tmp_path / "reports/smoke/dro/certificate.json").write_text(json.dumps(cert))
    claim = next(c for e in cert["experiments"] for c in e["claims"] if c["id"] == "topk-b-over-ms-cub-r1")
    assert (claim["verdict"], claim["look"]) == ("underpowered", 1)
    _, cells = second_wave_plan.write(plan, tmp_path)
    planned = cells["dro.t1"]
    assert planned["cub/dro_topk_b"]["seeds"] == planned["cub/ms"]["seeds"]  # still paired
    assert "claim topk-b-over-ms-cub-r1" in planned["cub/ms"]["for"]
    design, spec_exp = sequential.Design(sequential.OBRIEN_FLEMING, 10), spec["experiments"][0]
    chance = [
        claim_family.power_of(claim, spec_exp, lambda r, d, m=m: set(range(m)), design.level(0.05, 2, 3, m) / 60)
        for m in range(4, 11)
    ]
    fewest = 4 + next(i for i, p in enumerate(chance) if p >= 0.8)
    assert fewest <= 3 + len(planned["cub/ms"]["seeds"]) <= 10  # or more, for a number of dro_topk_b's


def seeds(plan, key: str) -> dict[tuple[str, str], list[int]]:
    """(dataset, row) → the seeds the plan trains in that cell of `key`."""
    found: dict = {}
    for run in plan.runs(key):
        found.setdefault((run.dataset, run.method), []).append(run.seed)
    return {cell: sorted(s) for cell, s in found.items()}


def test_wave_one_claim_seeds_trains_a_claims_cells_its_smallest_seeds_and_leaves_the_rest_to_wave_two():
    config = {"preset": "smoke", "seeds": None, "experiments": ["ms.t1", "ephn.t1", "ephn.f4"]}
    fixed = Plan.load(CONFIG_DIR, config)
    small = Plan.load(CONFIG_DIR, {**config, "second_wave": {"max_seeds": 14, "wave_one_claim_seeds": 5}})
    assert max(len(s) for s in seeds(fixed, "ms.t1").values()) > 5  # the claim_seeds of its claims' cells
    assert all(s == [0, 1, 2, 3, 4] for s in seeds(small, "ms.t1").values())  # its seeds, every cell
    assert seeds(small, "ephn.t1") == seeds(fixed, "ephn.t1")  # no claim_seeds: as it was
    figure = {cell: [0, 1, 2, 3, 4] if len(s) > 1 else s for cell, s in seeds(fixed, "ephn.f4").items()}
    assert seeds(small, "ephn.f4") == figure  # a figure's one seed: five in its claims' cells, seeds 0-4
    assert second_wave.design(small) == {"spending": "obrien_fleming", "max_seeds": 14, "wave_one_claim_seeds": 5}
    assert second_wave.wave_one(small, "ms.t1") == {f"{d}/{m}": 5 for d, m in seeds(small, "ms.t1")}


def test_a_claim_no_second_look_decides_ties_no_cells_and_stops_none_from_pairing():
    a, b, c = ("e", "a", "cub"), ("e", "b", "cub"), ("e", "c", "cub")
    found = {a: (6, ["x"]), b: (8, ["y"]), c: (5, ["z"])}
    paired = second_wave_plan.paired(found, [[], [a, b], [b, c]])
    assert {cell: seeds for cell, (seeds, _) in paired.items()} == {a: 8, b: 8, c: 8}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"max_seeds": "ten"}, "second_wave.max_seeds: 'ten'"),
        ({"max_seeds": 3}, "second_wave.max_seeds: 3"),
        ({"max_seeds": 500}, "second_wave.max_seeds: 500"),
        ({"max_seeds": 10, "spending": "linear"}, "second_wave.spending: 'linear': one of obrien_fleming, pocock"),
        ({"seeds": 10}, "second_wave: {'seeds': 10}"),
        ({"max_seeds": 10, "wave_one_claim_seeds": 12}, "second_wave.wave_one_claim_seeds: 12"),
        ({"max_seeds": 10, "wave_one_claim_seeds": 2}, "second_wave.wave_one_claim_seeds: 2"),
        ({"max_seeds": 10, "second_look": "numbers"}, "second_wave.second_look: 'numbers'"),
    ],
)
def test_a_bad_second_wave_design_names_the_file_the_key_and_the_value(given, said):
    with pytest.raises(ConfigError) as error:
        Plan.load(CONFIG_DIR, {**SMALL, "second_wave": given})
    assert "presets/smoke.yaml" in str(error.value) and said in str(error.value)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({"design": {"spending": "pocock", "max_seeds": 8}, "cells": {}}, "'spending': 'pocock'} was planned"),
        ({"design": {"spending": "obrien_fleming", "max_seeds": 8}, "cells": {"ms.t9": {}}}, "cells.ms.t9"),
        (
            {
                "design": {"spending": "obrien_fleming", "max_seeds": 8},
                "cells": {"ms.t1": {"cub/ms": {"seeds": [5, -1]}}},
            },
            "cells.ms.t1.cub/ms.seeds: [5, -1]",
        ),
    ],
)
def test_a_bad_second_wave_file_names_the_file_the_key_and_the_value(tmp_path, monkeypatch, content, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports/smoke").mkdir(parents=True)
    (tmp_path / "reports/smoke/second_wave.yaml").write_text(yaml.safe_dump(content))
    with pytest.raises(ConfigError) as error:
        Plan.load(CONFIG_DIR, {**SMALL, "second_wave": {"max_seeds": 8}})
    assert "reports/smoke/second_wave.yaml" in str(error.value) and said in str(error.value)


# --- a smoke-sized second wave through Snakemake --------------------------------------------------

SMOKE = ("preset=smoke", "experiments=[ms.t1]", "subset={ms.t1: {datasets: [cub], methods: [raw], seeds: [0, 1, 2]}}")
CAP, PLANNED = 8, 5  # the cap, and the seeds the test's margin lets a second look need at most


def _snakemake(checkout, work, *args):
    command = snakemake_command(
        work,
        *args,
        "--cores",
        "2",
        "--config",
        *SMOKE,
        f"second_wave={{max_seeds: {CAP}}}",
        snakefile=checkout / "Snakefile",
    )
    env = dict(python_env(), PYTHONPATH=str(checkout))
    result = processes.run(command, timeout=600, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def _second_wave(checkout, work):
    config = {
        "preset": "smoke",
        "experiments": ["ms.t1"],
        "subset": {"ms.t1": {"datasets": ["cub"], "methods": ["raw"], "seeds": [0, 1, 2]}},
        "second_wave": {"max_seeds": CAP},
    }
    command = ["-m", "dmlbench", "second-wave", "--config-dir", str(checkout / "workflow/config")]
    result = processes.run(
        [shutil.which("python", path=python_env()["PATH"]), *command, "--config", json.dumps(config)],
        cwd=work,
        timeout=300,
        capture_output=True,
        text=True,
        env=dict(python_env(), PYTHONPATH=str(checkout)),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return (work / "reports/smoke/second_wave.yaml").read_text()


def _raw_on_cub(work) -> dict:
    cert = json.loads((work / "reports/smoke/ms/certificate.json").read_text())
    t1 = next(e for e in cert["experiments"] if e["id"] == "ms.t1")
    return next(x for x in t1["numbers"] if x["row"] == "raw" and x["dataset"] == "cub")


@pytest.mark.slow
def test_a_smoke_second_wave_trains_only_its_seeds_judges_them_at_look_two_and_then_rests(tmp_path):
    """Wave 1 (raw on CUB, three seeds), its certificate under an O'Brien-Fleming design capped at
    eight seeds, the seeds planned (at most two more), wave 2 trains only those, its verdict at
    look 2's boundary, and nothing left to do. The fixtures' spread is wide: ms.t1's margin is set (in a copy of the
    catalogue) where look 1 leaves raw's Recall@1 inconclusive and a second look decides it."""
    checkout, work = tmp_path / "checkout", tmp_path / "work"
    checkout.mkdir()
    for part in ("Snakefile", "workflow", "dmlbench"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy2)(REPO / part, checkout / part)
    _snakemake(checkout, work, "reports/smoke/ms/certificate.json")
    values = pd.read_csv(work / "reports/smoke/ms.t1/runs.csv")["recall@1"].to_numpy()
    design = sequential.Design(sequential.OBRIEN_FLEMING, CAP)
    band = next(  # the narrowest band at which look 1 is inconclusive and a second look within the cap decides
        b
        for b in np.arange(1.0, 100.0, 0.5)
        if (j := numbers.judge(values, 65.06, b + 0.005, design.number_levels(3))).verdict == numbers.INCONCLUSIVE
        and (j.seeds_needed or CAP + 1) <= PLANNED
    )
    catalogue = checkout / "workflow/config/experiments/ms.yaml"
    text = catalogue.read_text()
    at = text.index("\nms.t1:")
    at = text.index("  table: {metrics: [recall@1]}", at)
    catalogue.write_text(text[:at] + f"  margin: {{band: {band}, source: a test's}}\n" + text[at:])
    _snakemake(checkout, work, "reports/smoke/ms/certificate.json")  # the certificate alone, again
    raw = _raw_on_cub(work)
    assert (raw["verdict"], raw["look"], raw["n"]) == (numbers.INCONCLUSIVE, 1, 3)
    written = _second_wave(checkout, work)
    extra = yaml.safe_load(written)["cells"]["ms.t1"]["cub/raw"]["seeds"]
    assert extra == list(range(3, raw["seeds_needed"])) and 3 + len(extra) <= PLANNED <= CAP
    assert _second_wave(checkout, work) == written  # the same certificates: the same file
    dry = _snakemake(checkout, work, "reports/smoke/ms/certificate.json", "-n")
    jobs = planned(dry)
    assert jobs["train"] == len(extra) and jobs["certificate"] == 1, jobs  # the extra seeds alone, and what reads them
    _snakemake(checkout, work, "reports/smoke/ms/certificate.json")
    after = _raw_on_cub(work)
    assert (after["look"], after["n"]) == (2, 3 + len(extra))
    cert = json.loads((work / "reports/smoke/ms/certificate.json").read_text())
    at_two = sum(x.get("look") == 2 for e in cert["experiments"] for x in e["numbers"] + e["claims"])
    assert f"): {at_two} of 61 numbers and claims at look 2" in (work / "reports/smoke/ms/certificate.md").read_text()
    values = pd.read_csv(work / "reports/smoke/ms.t1/runs.csv")["recall@1"].to_numpy()
    assert after["verdict"] == numbers.judge(values, 65.06, band + 0.005, design.number_levels(3)).verdict
    assert _second_wave(checkout, work) == written  # no third look
    rest = _snakemake(checkout, work, "reports/smoke/ms/certificate.json", "-n")
    assert "Nothing to be done" in rest.stdout + rest.stderr
