"""Every kind of file the suite reads, truncated or garbled: one message naming the file; what the
suite derived itself is set aside and made again by the rerun."""

import shutil

import pytest
import torch

from dmlbench.config.plan import Plan
from dmlbench.data import batches, cache, manifest, store
from dmlbench.data.prepare import prepare
from dmlbench.core.errors import ConfigError, DatasetError, DmlbenchError
from dmlbench.run_config import RunConfig

from conftest import CONFIG_DIR

pytestmark = pytest.mark.xdist_group("test_corrupt_files")  # one worker: its module fixture once


def truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def garble(path):
    data = bytearray(path.read_bytes())
    for i in range(0, len(data), 7):
        data[i] = (data[i] * 31 + 17) % 256
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def cub(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    path = root / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", root, path, fixture_size={"n_classes": 8, "per_class": 6, "image_size": 40})
    return path


@pytest.mark.parametrize("damage", ["truncated pixels", "half-written index"])
def test_a_damaged_store_is_named_set_aside_and_rebuilt(cub, tmp_path, damage):
    folder = tmp_path / "store32"
    store.build(cub, folder, 32, log=lambda m: None)
    if damage == "truncated pixels":
        truncate(folder / "pixels.npy")
        named = "pixels.npy"
    else:
        truncate(folder / "store.json")
        named = "store.json"
    with pytest.raises(DatasetError, match=rf"{named}.*set aside as .*store32\.corrupt.*Rerun"):
        store.open_pixels(folder, cub, 32)
    assert not folder.exists()
    store.build(cub, folder, 32, log=lambda m: None)  # what the rerun's store step does
    assert store.open_pixels(folder, cub, 32).shape[1:] == (32, 32, 3)


def test_a_damaged_cached_image_sets_the_cache_aside_and_the_cache_step_makes_it_again(cub, tmp_path):
    source = tmp_path / "fixture" / "cub"
    shutil.copytree(cub.parent, source)
    out = source / "cache32" / "manifest.csv"
    cache.build(source / "manifest.csv", out, 32)
    table = manifest.read(out)
    garble(out.parent / table.loc[0, "path"])
    cfg = RunConfig.from_dict(
        {"data": {"manifest": str(out)}, "input": {"resize": 32, "crop": 28, "padding": 0, "flip": False}}
    )
    data = batches.split_images(table, table.index[:3], out.parent, cfg, train=False)
    with pytest.raises(DatasetError, match=r"cached image .*cannot be read.*set aside as manifest\.csv\.corrupt"):
        [data[i] for i in range(3)]
    assert not out.exists()
    cache.build(source / "manifest.csv", out, 32)  # the rerun's cache step
    fresh = batches.split_images(manifest.read(out), table.index[:3], out.parent, cfg, train=False)
    assert [fresh[i][1] for i in range(3)] == list(table.loc[table.index[:3], "label"])


@pytest.mark.parametrize("damage", [truncate, garble])
def test_a_damaged_manifest_is_named_and_set_aside(cub, tmp_path, damage):
    path = tmp_path / "cub" / "manifest.csv"
    path.parent.mkdir()
    manifest.write(manifest.read(cub), path)
    damage(path)
    with pytest.raises(
        DatasetError, match=rf"manifest {path} was changed or damaged.*set aside.*writes it again before the next step"
    ):
        manifest.read(path)
    assert not path.exists()  # so the prepare step runs again


def test_a_garbled_hand_made_manifest_is_named(tmp_path):
    path = tmp_path / "manifest.csv"
    path.write_bytes(b"path,label,split,super\na.jpg,\xff\xfe,train,\n")
    with pytest.raises(DatasetError, match=rf"manifest {path} cannot be read"):
        manifest.read(path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, cub):
    plan = Plan.load(CONFIG_DIR, {"preset": "smoke"})
    cfg = plan.resolve(plan.find_run("suite.baselines", "cub", "ms", 0))
    cfg["data"] = {"manifest": str(cub)}
    cfg.update(epochs=2, batches_per_epoch=2)
    cfg["keep"] = dict(cfg["keep"], checkpoint=True)  # a damaged checkpoint needs one kept (by default, none is)
    return cfg


def train_quietly(cfg, run_dir, messages=None):
    from dmlbench.training.train import train

    return train(cfg, run_dir, log=(messages.append if messages is not None else lambda m: None))


@pytest.mark.parametrize("damage", [truncate, garble])
def test_a_damaged_checkpoint_is_named_and_the_run_trains_afresh(trained, tmp_path, damage):
    run_dir = tmp_path / "run"
    train_quietly(trained, run_dir)
    (run_dir / "model.pt").unlink()
    damage(run_dir / "checkpoint.pt")
    messages = []
    train_quietly(trained, run_dir, messages)
    assert any(f"{run_dir / 'checkpoint.pt'} is corrupt" in m and "trains afresh" in m for m in messages)
    assert (run_dir / "model.pt").exists()
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert state["epochs_done"] == 2


@pytest.mark.parametrize("damage", [truncate, garble])
def test_a_damaged_model_is_named_set_aside_and_written_again_from_the_checkpoint(trained, tmp_path, damage, capsys):
    from dmlbench.evaluation.evaluate_run import evaluate

    run_dir = tmp_path / "run"
    train_quietly(trained, run_dir)
    expected = evaluate(run_dir, run_dir / "metrics.json")["metrics"]
    damage(run_dir / "model.pt")
    assert evaluate(run_dir, run_dir / "metrics.json")["metrics"] == expected
    said = capsys.readouterr().err
    assert f"{run_dir / 'model.pt'} is corrupt" in said and "written again from the run's complete checkpoint" in said
    assert (run_dir / "model.pt.corrupt").exists()
    # without a complete checkpoint, the train step has to make it: named, set aside, and it does
    damage(run_dir / "model.pt")
    (run_dir / "checkpoint.pt").unlink()
    with pytest.raises(DmlbenchError, match=rf"{run_dir / 'model.pt'} is corrupt.*delete that file and rerun"):
        evaluate(run_dir, run_dir / "metrics.json")
    assert not (run_dir / "model.pt").exists()
    train_quietly(trained, run_dir)
    assert evaluate(run_dir, run_dir / "metrics.json")["metrics"]["recall@1"] >= 0


@pytest.mark.parametrize("content", ['{"metrics": "x", "run": {}}', '{"run": {"experiment": "suite', "\x00\xff"])
def test_a_malformed_metrics_file_is_named_and_set_aside(tmp_path, content):
    from dmlbench.report import aggregate

    path = tmp_path / "run" / "metrics.json"
    path.parent.mkdir()
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(DmlbenchError, match=rf"{path} is not a metrics file.*set aside as metrics\.json\.corrupt"):
        aggregate.collect([path])
    assert not path.exists() and path.with_name("metrics.json.corrupt").exists()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda lines: lines[:3] + [lines[1]] + lines[4:], r"images\.txt: the id '2' is listed twice, lines 2 and 4"),
        (lambda lines: lines[:2] + [lines[2].split()[0]] + lines[3:], r"images\.txt: line 3 is not '<id> <file>'"),
    ],
)
def test_damaged_dataset_lists_are_named_with_their_line(tmp_path, edit, message):
    fixture = tmp_path / "fx" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 4, "per_class": 2})
    images_txt = next((fixture.parent / "raw").rglob("images.txt"))
    images_txt.write_text("\n".join(edit(images_txt.read_text().splitlines())) + "\n")
    with pytest.raises(DatasetError, match=message):
        prepare(
            "cub", "real", tmp_path, tmp_path / "real" / "cub" / "manifest.csv", user_path=str(fixture.parent / "raw")
        )


def test_garbled_labels_are_named_with_their_line(tmp_path):
    fixture = tmp_path / "fx" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 4, "per_class": 2})
    labels = next((fixture.parent / "raw").rglob("image_class_labels.txt"))
    lines = labels.read_text().splitlines()
    lines[4] = lines[4].split()[0] + " \x07x"
    labels.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"image_class_labels\.txt: line 5 is not '<id> <label>'"):
        prepare(
            "cub", "real", tmp_path, tmp_path / "real" / "cub" / "manifest.csv", user_path=str(fixture.parent / "raw")
        )


@pytest.mark.parametrize(
    "text, message",
    [
        ("- a\n- b\n", "must hold a mapping"),
        ("data: {root: [\n", "is not valid YAML"),
        (b"\xff\xfe\x00garbled", "is not UTF-8 text"),
    ],
)
def test_a_damaged_preset_is_named(tmp_path, text, message):
    config = tmp_path / "config"
    shutil.copytree(CONFIG_DIR, config)
    preset = config / "presets" / "mine.yaml"
    preset.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError, match=rf"{preset}.*{message}|{message}"):
        Plan.load(config, {"preset": "mine"})
