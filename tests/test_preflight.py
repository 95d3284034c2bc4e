"""Preflight: grouping by code path, failures reported for exactly their group, budget arithmetic."""

import copy
import math
from dataclasses import replace

import pytest

from dmlbench.config.plan import Plan
from dmlbench.preflight import budget
from dmlbench.preflight.grouping import code_path, group_runs
from dmlbench.preflight.coverage import bounded, structure
from dmlbench.preflight.runner import probe_all
from dmlbench.run_config import RunConfig

from conftest import CONFIG_DIR, full_plan

pytestmark = pytest.mark.xdist_group("test_preflight")  # one worker: its module fixture once


@pytest.fixture(scope="module")
def full():
    return full_plan()


@pytest.fixture(scope="module")
def full_groups(full):
    """The full plan's groups, grouped once for the module (about 5 s)."""
    return group_runs(full)


def test_runs_differing_only_in_seed_share_a_group(full):
    runs = full.runs("dro.f4")  # 6 methods on cub, each its seeds (a claim's cells more: claim_seeds)
    groups = group_runs(full, runs)
    assert len(groups) == 6 == len({r.method for r in runs})
    for g in groups:  # a group: one method's runs, every seed of it
        assert {r.method for r in g.runs} == {g.run.method}
        assert sorted(r.seed for r in g.runs) == sorted(r.seed for r in runs if r.method == g.run.method)
        assert len(g.runs) >= 5


@pytest.mark.parametrize(
    "path, value",
    [
        (("model", "backbone"), "resnet50"),
        (("model", "embedding_dim"), 64),
        (("model", "pretrained"), False),
        (("input", "crop"), 200),
        (("batch", "size"), 160),
        (("batch", "per_class"), 4),
        (("method", "loss", "gamma"), 0.001),
        (("method", "miner"), {"name": "hardest"}),
        (("method", "sampler"), "shuffle"),
        (("optimizer", "name"), "sgd"),
        (("schedule", "milestones"), [3]),
        (("scheme", "hncm"), True),
        (("eval", "every"), 5),
        (("record", "scatter_epochs"), [0]),
    ],
)
def test_a_code_path_setting_makes_another_group(full, path, value):
    cfg = full.resolve(full.runs("dro.t1")[0])
    changed = copy.deepcopy(cfg)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert code_path(changed, "cub") != code_path(cfg, "cub")


def test_seed_learning_rate_and_a_dataset_of_the_same_layout_keep_the_group(full):
    cfg = full.resolve(full.runs("dro.t1")[0])
    other = copy.deepcopy(cfg)
    other["seed"] = 7
    other["optimizer"]["lr"] = 3e-4
    assert code_path(other, "cars") == code_path(cfg, "cub")
    assert code_path(cfg, "inshop") != code_path(cfg, "cub")  # query/gallery evaluation


def _skeleton(settings):
    """Names and switches of a loss/miner/scheme setting, each number reduced to zero or not."""
    if not isinstance(settings, dict):
        return repr(settings)
    return repr(
        sorted(
            (
                key,
                value
                if isinstance(value, (str, bool, type(None)))
                else _skeleton(value)
                if isinstance(value, (dict, list))
                else value == 0,
            )
            for key, value in settings.items()
        )
    )


def test_bounded_part_covers_every_paper_backbone_loss_miner_sampler_scheme_and_layout(full_groups):
    from dmlbench.data import datasets

    groups = full_groups
    part = bounded(groups)
    assert len(part) < len(groups) / 4
    assert [g.key for g in part] == [g.key for g in groups if g in part]  # the plan's order
    for name, of in (
        ("paper", lambda g: g.run.experiment.split(".")[0]),
        ("backbone", lambda g: g.cfg["model"]["backbone"]),
        ("loss", lambda g: _skeleton(g.cfg["method"]["loss"])),
        ("miner", lambda g: _skeleton(g.cfg["method"]["miner"])),
        ("sampler", lambda g: g.cfg["method"]["sampler"]),
        ("scheme", lambda g: _skeleton(g.cfg["scheme"])),
        ("layout", lambda g: datasets.get(g.run.dataset).evaluation),
    ):
        assert {of(g) for g in part} == {of(g) for g in groups}, name


def test_the_bounded_part_prefers_the_cheaper_of_two_groups_with_the_same_features(full_groups):
    groups = full_groups
    twin = copy.deepcopy(groups[0])
    twin.key, twin.cfg["batch"]["size"] = "twin", groups[0].cfg["batch"]["size"] // 2
    assert twin in bounded([groups[0], twin]) and groups[0] not in bounded([groups[0], twin])
    assert bounded([twin, groups[0]]) == [twin]


def test_a_zero_or_a_sign_is_structure_and_a_value_is_not():
    assert structure({"margin": 0.2, "k": 4, "on": True}) == structure({"margin": 0.5, "k": 9, "on": True})
    assert structure({"margin": 0.0}) != structure({"margin": 0.2}) != structure({"margin": -0.2})
    assert structure({"on": True}) != structure({"on": False})
    assert structure({"name": "ms"}) != structure({"name": "lifted"})


@pytest.mark.parametrize("jobs, warm_steps", [(1, 0), (2, 2)])
def test_an_injected_failure_is_reported_for_exactly_its_group(tmp_path, jobs, warm_steps):
    smoke = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    groups = group_runs(smoke, smoke.runs("ms.t1") + smoke.runs("dro.t1"))
    assert len(groups) == 4
    # SoftTriple at γ = 1e-300 (its range, > 0, allows it) divides by zero in float32: a NaN loss
    groups[1].cfg["method"] = {
        "name": "softtriple",
        "loss": {"name": "softtriple", "gamma": 1e-300},
        "miner": None,
        "sampler": "shuffle",
    }
    groups[2].cfg["model"].update(backbone="bninception", embedding_dim=8)  # rejects 16-pixel input
    groups[2].cfg["input"].update(resize=16, crop=16)
    table = probe_all(
        groups, tmp_path, None, "cpu", "smoke", log=lambda m: None, jobs=jobs, threads=1, warm_steps=warm_steps
    )
    assert list(table["status"]) == ["passed", "failed", "failed", "passed"]
    assert "training diverged" in table.loc[1, "error"] and "nan" in table.loc[1, "error"]
    assert table.loc[2, "error"] and "diverged" not in table.loc[2, "error"]
    assert table.loc[1, "run_list"] == " ".join(r.path("smoke") for r in groups[1].runs)
    assert (table.loc[[0, 3], "seconds_per_step"] > 0).all()
    # groups 1 and 3 share group 0's network: their code paths ran on the small trunk, timed by group 0
    assert list(table["timed_by"]) == [groups[0].key, groups[0].key, groups[2].key, groups[0].key]
    assert table.loc[3, "seconds_per_step"] == table.loc[0, "seconds_per_step"]
    assert table.loc[3, "peak_mb"] == table.loc[0, "peak_mb"]


@pytest.mark.parametrize("image_side", [64, None])
def test_a_group_is_timed_by_the_first_group_of_its_network_shape(full, image_side):
    from dmlbench.preflight.grouping import shape_owners

    groups = group_runs(full, full.runs("ms.t2") + full.runs("suite.knobs") + full.runs("suite.modern"))
    owners = shape_owners(groups, image_side)

    def trunk_work(group):  # what the trunk computes: at one image side for all, the crop is not in it
        cfg = RunConfig.from_dict(group.cfg)
        size = (cfg.input.crop, cfg.input.resize) if image_side is None else ()
        return (
            cfg.model.backbone,
            cfg.model.frozen_bn,
            cfg.model.frozen_patch_embed,
            cfg.optimizer.layer_decay != 1,
            cfg.batch.size,
            cfg.performance,
            size,
        )

    for group in groups:
        owner = next(g for g in groups if g.key == owners[group.key])
        assert groups.index(owner) <= groups.index(group)
        assert trunk_work(owner) == trunk_work(group)
    by_work = {}
    for group in groups:
        by_work.setdefault(trunk_work(group), set()).add(owners[group.key])
    assert all(len(keys) == 1 for keys in by_work.values())  # another trunk, batch or size: another shape
    assert len(set(owners.values())) == len(by_work) < len(groups)
    if image_side:  # the papers' 224, 227 and 256-pixel crops are one probe at 64 px
        assert len(set(owners.values())) < len(set(shape_owners(groups, None).values()))


def test_probes_start_on_real_trunks_largest_batch_first(full):
    from dmlbench.preflight.grouping import shape_owners
    from dmlbench.preflight.runner import longest_first

    groups = group_runs(full, full.runs("ms.t2") + full.runs("dro.t1") + full.runs("suite.modern"))
    owners = shape_owners(groups, 64)
    order = longest_first(groups, owners)
    assert sorted(g.key for g in order) == sorted(g.key for g in groups)
    trunk = [owners[g.key] == g.key for g in order]
    assert trunk == sorted(trunk, reverse=True)
    for part in (True, False):
        sizes = [g.typed.batch.size for g, on_trunk in zip(order, trunk) if on_trunk == part]
        assert sizes == sorted(sizes, reverse=True)


def test_a_probe_worker_imports_nothing_its_fork_server_has_not(monkeypatch):
    """The workers' entry point lives in a module the fork server preloads (one elsewhere was
    imported by every probe process: about 1.3 s each)."""
    from dmlbench.preflight import runner, workers

    started = {}

    class Recorder:
        def __init__(self, target, args, daemon):
            started["target"] = target

        def start(self):
            pass

    context = type(
        "Context",
        (),
        {
            "set_forkserver_preload": staticmethod(lambda modules: started.update(preload=modules)),
            "Process": Recorder,
            "Pipe": staticmethod(workers.multiprocessing.Pipe),
        },
    )
    monkeypatch.setattr(workers.multiprocessing, "get_context", lambda method: context())
    workers.Worker(1, runner.PROBE_PRELOAD)
    assert started["target"].__module__ in started["preload"]


def test_one_worker_probes_group_after_group_and_a_crash_fails_only_its_group(tmp_path, monkeypatch):
    """Workers live across groups (imports and a GPU's context made once); a worker killed in the
    middle of a group fails that group, and a fresh worker probes the rest."""
    import os
    import signal

    from dmlbench.preflight import workers

    smoke = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    groups = group_runs(smoke, smoke.runs("ms.t1") + smoke.runs("dro.t1"))
    started, submitted = [], []
    worker_class = workers.Worker

    class Counted(worker_class):
        def __init__(self, *args):
            super().__init__(*args)
            started.append(self.process.pid)

        def submit(self, group, **task):
            super().submit(group, **task)
            submitted.append((group.key, self.process.pid))
            if len(submitted) == 2:  # the second group's worker dies in the middle of it
                os.kill(self.process.pid, signal.SIGKILL)

    monkeypatch.setattr(workers, "Worker", Counted)
    table = probe_all(groups, tmp_path, None, "cpu", "smoke", log=lambda m: None, jobs=1, threads=1)
    crashed = submitted[1][0]
    assert list(table.loc[table["status"] == "failed", "group"]) == [crashed]
    assert "signal 9" in table.set_index("group").loc[crashed, "error"]
    assert (table.loc[table["group"] != crashed, "seconds_per_step"] > 0).all()
    assert len(submitted) == len(groups) and len(started) == 2  # one worker, and one after the crash
    assert submitted[0][1] == submitted[1][1] != submitted[2][1] == submitted[3][1]
    for pid in started:  # no worker outlives the preflight
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_peak_memory_starts_afresh_for_each_group_in_a_worker():
    import numpy as np

    from dmlbench.core import environment
    from dmlbench.preflight.workers import reset_peak_memory

    block = np.ones(200 * 2**20 // 8)  # 200 MiB resident
    block[:] = 2.0
    before = environment.peak_resident_mib()
    del block
    reset_peak_memory("cpu")
    assert environment.peak_resident_mib() < before - 150


def test_a_light_probe_changes_the_trunk_alone(full, tmp_path):
    from dmlbench.preflight.probe import LIGHT_TRUNK, probe_config

    cfg = copy.deepcopy(group_runs(full, full.runs("suite.modern"))[0].cfg)  # a ViT …
    cfg["optimizer"]["layer_decay"], cfg["model"]["frozen_patch_embed"] = 0.75, True  # … with its own settings
    manifest = tmp_path / "manifest.csv"
    full_probe = probe_config(cfg, manifest, 64, "cpu")
    light = probe_config(cfg, manifest, 64, "cpu", light=True)
    assert light.model.backbone == LIGHT_TRUNK != full_probe.model.backbone
    assert light.optimizer.layer_decay == 1.0 and not light.model.frozen_patch_embed
    assert light.model.embedding_dim == full_probe.model.embedding_dim
    same = dict(model=full_probe.model, optimizer=full_probe.optimizer)
    assert replace(light, **same) == full_probe  # batch, method, scheme, evaluation: the group's


def test_a_killed_preflight_leaves_the_table_and_budget_of_what_it_probed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    import pandas as pd

    from conftest import python_env
    from processes import start, stop

    out = tmp_path / "out"
    child = start(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "preflight",
            "--preset",
            "smoke",
            "--jobs",
            "1",
            "--workdir",
            str(tmp_path / "work"),
            "--output-dir",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=python_env(),
    )
    try:
        deadline = time.monotonic() + 600
        while not (out / "budget.md").exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(child.pid, signal.SIGKILL)  # no chance to tidy up, for it and its probes
    finally:
        stop(child)
    table = pd.read_csv(out / "preflight.csv")
    groups = group_runs(Plan.load(CONFIG_DIR, {"preset": "smoke"}))
    assert 1 <= len(table) < len(groups)
    assert list(table["group"]) == [g.key for g in groups[: len(table)]]
    left = len(groups) - len(table)
    assert f"**Incomplete**: {left} group(s) not probed" in (out / "preflight.md").read_text()
    budget_text = (out / "budget.md").read_text()
    assert "**Incomplete**" in budget_text and "| **all** |" in budget_text
    probed = {r.path("smoke") for g in groups[: len(table)] for r in g.runs}
    assert set(pd.read_csv(out / "budget.csv")["run"]) <= probed


def test_budget_of_a_hand_computed_plan():
    raw = {
        "epochs": 10,
        "batches_per_epoch": None,
        "batch": {"size": 80, "per_class": 5, "per_pair": 5},
        "method": {"loss": {"name": "contrastive"}, "sampler": "m_per_class"},
        "eval": {"every": 5},
        "record": {"scatter_epochs": [], "probe": {"epochs": [], "steps": 146}},
    }
    cfg = RunConfig.from_dict(raw)
    assert budget.steps_per_epoch(cfg, "cub") == 5864 // 80 == 73
    assert budget.evaluations(cfg) == 3
    assert budget.run_seconds(cfg, "cub", 0.5, 0.001) == pytest.approx(10 * 73 * 0.5 + 3 * 5924 * 0.001)
    fold = replace(cfg, data={"fold": {"of": 4}}, run={"stage": "search"})  # the fair protocol's fold training
    assert budget.steps_per_epoch(fold, "cub") == 5864 * 3 // 4 // 80 == 54  # three of the four folds
    assert budget.run_seconds(fold, "cub", 0.5, 0.001) == pytest.approx(10 * 54 * 0.5 + 3 * 5864 / 4 * 0.001)
    final = replace(fold, run={"stage": "final"})  # … and its final runs embed the test half once
    assert budget.run_seconds(final, "cub", 0.5, 0.001) == pytest.approx(10 * 54 * 0.5 + (3 * 5864 / 4 + 5924) * 0.001)
    kept = replace(cfg, data={"fold": {"of": 4, "epochs_scored_on": "test_half"}}, run={})  # suite.knobs, test-selected
    assert budget.run_seconds(kept, "cub", 0.5, 0.001) == pytest.approx(10 * 54 * 0.5 + (3 * 5924 + 5924) * 0.001)
    pairs = replace(cfg, method=replace(cfg.method, sampler="category_pairs"))
    assert budget.steps_per_epoch(pairs, "sop") == 66 * 5 and budget.steps_per_epoch(pairs, "inshop") == 253 * 5
    fixed = replace(cfg, batches_per_epoch=12, eval=replace(cfg.eval, every=0))
    assert budget.run_seconds(fixed, "inshop", 2.0, 0.01) == pytest.approx(10 * 12 * 2.0 + (14218 + 12612) * 0.01)
    assert budget.wall_seconds([5, 4, 3, 3, 3], 2) == 10  # longest first: {5, 3} then {4, 3, 3}
    assert budget.wall_seconds([5, 4, 3, 3, 3], 8) == 5 and budget.wall_seconds([1.0] * 9, 4) == 3
    assert math.isclose(budget.wall_seconds([2.0] * 4, 1), 8.0)


@pytest.mark.slow
def test_bounded_preflight_of_the_full_catalogue_passes(tmp_path, full_groups):
    """Every paper, backbone, loss, miner, sampler and scheme of `full` at its real batch and
    parameters, on fixtures at 32-pixel crops (`make preflight` runs every group)."""
    import sys

    import pandas as pd

    from dmlbench.report.index import _budget_html

    from conftest import python_env
    from processes import run

    out = tmp_path / "reports" / "full" / "preflight"
    done = run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "preflight",
            "--bounded",
            "--image-side",
            "32",
            "--workdir",
            str(tmp_path / "work"),
            "--output-dir",
            str(out),
        ],
        timeout=3600,
        capture_output=True,
        text=True,
        env=python_env(),
    )
    table = pd.read_csv(out / "preflight.csv")
    failed = table[table["status"] != "passed"]
    assert done.returncode == 0 and failed.empty, failed[["code_path", "error"]].to_string() + done.stderr[-3000:]
    part = bounded(full_groups)
    assert list(table["group"]) == [g.key for g in part]
    assert (table["seconds_per_step"] > 0).all() and (table["peak_mb"] > 0).all()
    projection = pd.read_csv(out / "budget.csv")
    assert list(projection["run"]) == [r.path("full") for g in part for r in g.runs]
    assert (projection["hours"] > 0).all()
    text = (out / "budget.md").read_text()
    assert "scaled from 32 px" in text and "| **all** |" in text
    page = _budget_html(out / "budget.md", "full", out.parent)
    assert "Compute budget" in page and "preflight/preflight.md" in page


def test_the_budget_lists_each_experiments_results_disk_beside_its_hours(full, tmp_path):
    import pandas as pd

    from dmlbench.preflight import disk
    from dmlbench.preflight.outputs import PROJECTION_COLUMNS, project_group, write_budget

    groups = [g for g in group_runs(full, full.runs("ms.t1") + full.runs("dro.t1"))]
    measured = pd.Series({"status": "passed", "seconds_per_step": 0.5, "eval_seconds_per_image": 0.01})
    rows = [row for g in groups for row in project_group(full, g, measured, None)]
    projection = pd.DataFrame(rows, columns=PROJECTION_COLUMNS)
    for row in rows:  # each run's own need
        run = next(r for g in groups for r in g.runs if r.path("full") == row["run"])
        assert row["results_gb"] == disk.run_bytes(RunConfig.from_dict(full.resolve(run)), run.dataset) / 1e9
    write_budget(projection, tmp_path, "CPU", None, 8, "full")
    text = (tmp_path / "budget.md").read_text()
    assert "| results GB |" in text
    for experiment in ("ms.t1", "dro.t1"):
        line = next(l for l in text.splitlines() if l.startswith(f"| {experiment} |"))
        gb = projection.loc[projection["experiment"] == experiment, "results_gb"].sum()
        assert line.rstrip(" |").endswith(f"{gb:.1f}") and gb > 0


def test_a_fold_fixture_keeps_half_a_batch_in_every_category(full):
    """The hard and category samplers draw half a batch from one category: on folds (suite.knobs,
    suite.fair) the fixture's training fold must still hold that many images of each category
    (SOP's fixture: class c in category (c − 1) mod 12, the folds contiguous runs of classes)."""
    import numpy as np

    from dmlbench.preflight.probe import FIXTURE_GROUPS, fixture_size

    checked = set()
    for group in group_runs(full, full.runs("suite.knobs")):
        cfg = group.typed
        fold = cfg.data.get("fold")
        if not fold or cfg.method.sampler not in ("hard", "category_pairs") or group.run.dataset != "sop":
            continue
        size = fixture_size(group.cfg)
        key = (cfg.batch.size, cfg.batch.per_class, fold["of"], cfg.method.sampler)
        if key in checked:
            continue
        checked.add(key)
        train = np.arange(1, size["n_classes"] // 2 + 1)
        for held_out in np.array_split(train, fold["of"]):
            kept = np.setdiff1d(train, held_out)
            per_category = np.bincount((kept - 1) % FIXTURE_GROUPS, minlength=FIXTURE_GROUPS) * size["per_class"]
            assert per_category.min() >= cfg.batch.size / 2, (group.label, key, per_category)
    assert checked  # fastap's hard sampler on SOP folds
