"""The timm trunks: each builds with random initialisation on the CPU and gives the embedding size
asked for; its registered input convention is timm's own (`resolve_data_config`); its weights are
read only from a safetensors file of the expected sha256 (a wrong digest is refused naming the
file; a pickle is never unpickled); layer-wise learning-rate decay follows timm's layer numbering."""

import hashlib
import pickle

import pytest
import torch

pytest.importorskip("timm")
import timm  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from dmlbench.core.errors import ConfigError, DmlbenchError  # noqa: E402
from dmlbench.models import build, timm_trunks  # noqa: E402
from dmlbench.models.backbones import BACKBONES  # noqa: E402
from dmlbench.run_config import Model, RunConfig

NAMES = sorted(timm_trunks.TRUNKS)


def model_config(backbone: str, **changes) -> dict:
    return {
        "backbone": backbone,
        "embedding_dim": 24,
        "pretrained": False,
        "pooling": "avg",
        "frozen_bn": False,
        **changes,
    }


@pytest.mark.parametrize("name", NAMES)
def test_every_timm_trunk_builds_on_cpu_with_the_embedding_size_asked_for(name):
    torch.manual_seed(0)
    net = build(Model(**model_config(name))).eval()
    with torch.no_grad():
        out = net(torch.rand(2, 3, 48, 48))  # a side no patch size divides: padded by timm
    assert out.shape == (2, 24)
    assert torch.allclose(out.norm(dim=1), torch.ones(2), atol=1e-5)
    trunk = timm_trunks.TRUNKS[name]
    with torch.device("meta"):  # timm's network for its attributes alone: no weights drawn
        reference = timm.create_model(trunk.model, pretrained=False, num_classes=0)
    assert net.head.in_features == reference.num_features
    assert (reference.global_pool == "token") == trunk.cls_token


@pytest.mark.parametrize("name", NAMES)
def test_the_registered_input_convention_is_timms(name):
    trunk = timm_trunks.TRUNKS[name]
    with torch.device("meta"):
        config = timm.data.resolve_data_config({}, model=timm.create_model(trunk.model, pretrained=False))
    assert config["mean"] == pytest.approx(trunk.mean)
    assert config["std"] == pytest.approx(trunk.std)
    assert config["interpolation"] == trunk.interpolation
    assert config["input_size"] == (3, trunk.native_size, trunk.native_size)
    net = build(Model(**model_config(name)))  # the network normalises by that convention
    assert net.mean.flatten().tolist() == pytest.approx(list(trunk.mean))
    assert BACKBONES.get(name).std == trunk.std


def weights_file(tmp_path, name="vit_tiny_test"):
    """timm's own network of `name` at random initialisation, saved as a safetensors file."""
    torch.manual_seed(1)
    trunk = timm_trunks.TRUNKS[name]
    net = timm.create_model(trunk.model, pretrained=False)
    path = tmp_path / f"{trunk.model}.safetensors"
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(path))
    return path, net.state_dict(), hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_verified_file_is_loaded_without_the_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path, state, digest = weights_file(tmp_path)
    net = build(Model(**model_config("vit_tiny_test", pretrained=True, weights=str(path), weights_sha256=digest)))
    loaded = net.trunk.net.state_dict()
    assert all(torch.equal(loaded[k], state[k]) for k in loaded)


def test_a_wrong_digest_is_refused_naming_the_file(tmp_path):
    path, _, digest = weights_file(tmp_path)
    wrong = ("0" if digest[0] != "0" else "1") + digest[1:]
    with pytest.raises(DmlbenchError, match=rf"{path}: sha256 {digest} is not the expected {wrong}"):
        build(Model(**model_config("vit_tiny_test", pretrained=True, weights=str(path), weights_sha256=wrong)))
    catalogued = timm_trunks.TRUNKS["dinov2_b14"]  # its published digest is on record
    other = tmp_path / "other.safetensors"
    other.write_bytes(path.read_bytes())
    with pytest.raises(DmlbenchError, match=rf"{other}: sha256 .* is not the expected {catalogued.sha256}"):
        timm_trunks.verified_file(catalogued, str(other))


def test_weights_of_one_value_throughout_are_refused_whatever_their_digest(tmp_path):
    """A file with the right tensor names and shapes but zeros (or any constant) everywhere: its digest
    can be recorded, yet it was never trained; one with a varying tensor loads."""
    _, state, _ = weights_file(tmp_path)
    for value in (0.0, 0.5):
        path = tmp_path / f"constant{value}.safetensors"
        save_file({k: torch.full_like(v, value).contiguous() for k, v in state.items()}, str(path))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        with pytest.raises(DmlbenchError, match=rf"{path}: every tensor of .* holds a single value"):
            build(Model(**model_config("vit_tiny_test", pretrained=True, weights=str(path), weights_sha256=digest)))


def test_a_trunk_without_a_digest_on_record_asks_for_one(tmp_path):
    path, _, _ = weights_file(tmp_path)
    with pytest.raises(DmlbenchError, match="set model.weights_sha256"):
        build(Model(**model_config("vit_tiny_test", pretrained=True, weights=str(path))))
    with pytest.raises(DmlbenchError, match="is not the published"):
        timm_trunks.expected_digest(timm_trunks.TRUNKS["dinov2_b14"], "ab" * 32)


class _Planted:
    """Unpickling this object would write a file: proof that a pickle was executed."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickle_is_never_unpickled(tmp_path):
    marker = tmp_path / "executed"
    for suffix in (".pth", ".safetensors"):  # a pickle, and a pickle named as safetensors
        planted = tmp_path / f"weights{suffix}"
        planted.write_bytes(pickle.dumps(_Planted(marker)))
        digest = hashlib.sha256(planted.read_bytes()).hexdigest()
        with pytest.raises(Exception):
            build(Model(**model_config("vit_tiny_test", pretrained=True, weights=str(planted), weights_sha256=digest)))
        assert not marker.exists()


def test_layer_decay_follows_timms_layer_numbering():
    net = build(Model(**model_config("vit_tiny_test")))
    groups = net.parameter_groups(1.0, 10.0, 0.5)
    lr = {id(p): g["lr"] for g in groups for p in g["params"]}
    assert len(lr) == len(list(net.parameters()))
    vit = net.trunk.net
    depth = len(vit.blocks)
    for i, block in enumerate(vit.blocks):  # block i: lr × decay^(depth − 1 − i); the last at lr
        assert {lr[id(p)] for p in block.parameters()} == {0.5 ** (depth - 1 - i)}
    assert {lr[id(p)] for p in vit.patch_embed.parameters()} == {0.5**depth}
    assert lr[id(vit.cls_token)] == 0.5**depth
    assert {lr[id(p)] for p in vit.norm.parameters()} == {1.0}
    assert {lr[id(p)] for p in net.head.parameters()} == {10.0}
    assert [g["lr"] for g in net.parameter_groups(1.0, 10.0)] == [1.0, 10.0]  # decay 1: two groups


def test_settings_only_some_trunks_read_are_refused_elsewhere():
    def cfg(model: dict, layer_decay: float = 1.0) -> RunConfig:
        return RunConfig.from_dict(
            {"model": {"backbone": "resnet50", **model}, "optimizer": {"layer_decay": layer_decay}}
        )

    with pytest.raises(ConfigError, match="model.weights_sha256 is read for the timm trunks only"):
        timm_trunks.check_settings(cfg({"weights_sha256": "ab" * 32}), "run x")
    with pytest.raises(ConfigError, match="optimizer.layer_decay needs a timm transformer"):
        timm_trunks.check_settings(cfg({}, layer_decay=0.7), "run x")
    with pytest.raises(ConfigError, match="model.frozen_patch_embed needs a timm transformer"):
        timm_trunks.check_settings(cfg({"frozen_patch_embed": True}), "run x")
    timm_trunks.check_settings(cfg({"backbone": "vit_s16_dino", "frozen_patch_embed": True}, layer_decay=0.7), "run x")


class _Plan:
    """The two calls doctor makes of a plan, over given resolved models."""

    def __init__(self, models):
        self.models = models

    def all_runs(self):
        return list(range(len(self.models)))

    def resolve(self, run):
        return {"model": self.models[run]}


def test_doctor_names_each_timm_file_its_digest_and_where_it_goes(tmp_path):
    from dmlbench import doctor

    path, _, digest = weights_file(tmp_path)
    missing = tmp_path / "absent.safetensors"
    plan = _Plan(
        [
            model_config("vit_tiny_test", pretrained=True, weights=str(path), weights_sha256=digest),
            model_config("dinov2_b14", pretrained=True, weights=str(missing)),
            model_config("vit_s16_dino", pretrained=True, weights=None),
            model_config("vit_b16_dino", pretrained=False, weights=None),
        ]
    )
    checks = {c.item: c for c in doctor.timm_weight_checks(plan)}
    assert set(checks) == {"vit_tiny_test", "dinov2_b14", "vit_s16_dino"}  # not the untrained one
    assert checks["vit_tiny_test"].status == doctor.OK and str(path) in checks["vit_tiny_test"].detail
    dinov2 = checks["dinov2_b14"]
    assert dinov2.status == doctor.ACTION
    assert str(missing) in dinov2.detail and timm_trunks.TRUNKS["dinov2_b14"].sha256 in dinov2.detail
    assert "huggingface.co/timm/vit_base_patch14_dinov2.lvd142m" in dinov2.detail
    assert "set model.weights_sha256" in checks["vit_s16_dino"].detail
    assert "checkpoints/timm/vit_small_patch16_224.dino.safetensors (not there yet)" in checks["vit_s16_dino"].detail


def test_the_backbones_page_lists_every_timm_trunk_with_its_digest():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "docs" / "backbones.md").read_text()
    for name, trunk in timm_trunks.TRUNKS.items():
        row = next((line for line in readme.splitlines() if line.startswith(f"| `{name}` | `{trunk.model}` |")), None)
        assert row is not None, f"docs/backbones.md: no row for {name}"
        assert (trunk.sha256 or "none on record") in row
        assert trunk.overlap in row and trunk.pretraining in row


def test_runs_made_before_the_new_settings_keep_their_fingerprint():
    from dmlbench.training.run_folder import fingerprint

    before = {"model": {"backbone": "resnet50", "pretrained": True}, "optimizer": {"name": "adam", "lr": 1e-5}}
    after = {
        "model": dict(before["model"], weights_sha256=None, frozen_patch_embed=False),
        "optimizer": dict(before["optimizer"], layer_decay=1.0, clip_grad_norm=None),
    }
    assert fingerprint(after) == fingerprint(before)
    assert fingerprint({**after, "optimizer": dict(after["optimizer"], layer_decay=0.65)}) != fingerprint(before)
    assert fingerprint({**after, "model": dict(after["model"], weights_sha256="ab" * 32)}) != fingerprint(before)
    assert fingerprint({**after, "optimizer": dict(after["optimizer"], clip_grad_norm=3.0)}) != fingerprint(before)
    measured = {**after, "eval": {"ks": [1], "trunk_feature": False}}
    assert fingerprint(measured) == fingerprint({**after, "eval": {"ks": [1]}})
    assert fingerprint({**measured, "eval": {"ks": [1], "trunk_feature": True}}) != fingerprint(measured)


@pytest.mark.parametrize("name", NAMES)
def test_the_trunk_feature_is_timms_pooled_feature_with_the_head_removed(name):
    """What `eval.trunk_feature` scores: timm's own pooled feature of the same weights (its CLS
    token for a ViT: the 384-d feature Sph-ViT's authors report for ViT-S), not the head's output."""
    from dmlbench.evaluation.reference import TrunkFeatures

    torch.manual_seed(0)
    net = build(Model(**model_config(name))).eval()
    trunk = timm_trunks.TRUNKS[name]
    sized = {"img_size": trunk.img_size} if trunk.img_size else {}
    options = {"dynamic_img_size": True, "dynamic_img_pad": True} if trunk.cls_token else {}
    with torch.device("meta"):  # its weights are the trunk's own, assigned below: none drawn
        reference = timm.create_model(trunk.model, pretrained=False, num_classes=0, **sized, **options).eval()
    inner = net.trunk.net if trunk.cls_token else net.trunk
    reference.load_state_dict(inner.state_dict(), assign=True)
    assert not any(t.is_meta for t in [*reference.parameters(), *reference.buffers()])
    images = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        feature = TrunkFeatures(net)(images)
        expected = reference(net._prepare_input(images))
    assert feature.shape == (2, reference.num_features) != net(images).shape
    assert torch.allclose(feature, expected, atol=1e-5)


def _step(model, clip=None, lr=1.0):
    from dmlbench.methods.criterion import Criterion
    from dmlbench.training.step import train_step

    criterion = Criterion({"name": "m", "loss": {"name": "contrastive"}, "miner": None, "sampler": "m_per_class"})
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)
    images, labels = torch.rand(8, 3, 32, 32), torch.arange(4).repeat_interleave(2)
    before = [p.detach().clone() for p in model.parameters()]
    train_step(model, criterion, [optimizer], images, labels, clip_grad_norm=clip)
    grads = [p.grad for p in model.parameters()]
    return before, grads


def test_gradient_clipping_bounds_the_steps_norm():
    torch.manual_seed(0)
    free = build(Model(**model_config("vit_tiny_test")))
    _, grads = _step(free)
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads if g is not None))
    torch.manual_seed(0)
    clipped = build(Model(**model_config("vit_tiny_test")))
    start = [p.detach().clone() for p in clipped.parameters()]
    limit = float(norm) / 4
    _step(clipped, clip=limit)
    moved = torch.sqrt(sum(((p.detach() - b).double() ** 2).sum() for p, b in zip(clipped.parameters(), start)))
    assert float(moved) == pytest.approx(limit, rel=1e-4)  # SGD at lr 1: the step is the clipped gradient


def test_a_frozen_patch_embedding_keeps_its_weights():
    torch.manual_seed(0)
    model = build(Model(**model_config("vit_tiny_test", frozen_patch_embed=True)))
    patch = [p.detach().clone() for p in model.trunk.net.patch_embed.parameters()]
    blocks = [p.detach().clone() for p in model.trunk.net.blocks.parameters()]
    _step(model, lr=0.1)
    assert all(torch.equal(a, b) for a, b in zip(patch, model.trunk.net.patch_embed.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(blocks, model.trunk.net.blocks.parameters()))


def test_weights_that_are_cut_short_or_of_another_network_are_refused_naming_the_file(tmp_path):
    """The digest is the user's (so it matches): the file is still checked before timm reads it."""
    path, _, _ = weights_file(tmp_path)
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    other = tmp_path / "other.safetensors"
    save_file({"some.weight": torch.zeros(3)}, str(other))
    for planted, message in (
        (cut, "is not a readable safetensors file"),
        (other, r"lacks \d+ of the \d+ tensors of .*holds other weights"),
    ):
        digest = hashlib.sha256(planted.read_bytes()).hexdigest()
        with pytest.raises(DmlbenchError, match=rf"{planted}.*{message}"):
            build(Model(**model_config("vit_tiny_test", pretrained=True, weights=str(planted), weights_sha256=digest)))
