"""Backbones, the embedding head, weight loading and its failure messages."""

import hashlib
import urllib.error

import pytest
import torch

from dmlbench import models
from dmlbench.errors import DmlbenchError
from dmlbench.models import bninception, weights
from dmlbench.models.embedding import EmbeddingNet


@pytest.mark.parametrize("backbone, size", [("small_cnn", 32), ("resnet18", 64), ("googlenet", 64),
                                            ("bninception", 96)])
def test_embeddings_are_unit_vectors(backbone, size):
    torch.manual_seed(0)
    net = EmbeddingNet(backbone, embedding_dim=16, pretrained=False).eval()
    out = net(torch.rand(3, 3, size, size))
    assert out.shape == (3, 16)
    torch.testing.assert_close(out.norm(dim=1), torch.ones(3))


def test_bninception_has_1024_output_maps():
    maps = bninception.BNInception().eval()(torch.rand(1, 3, 224, 224))
    assert maps.shape == (1, 1024, 7, 7)


def test_bninception_weights_load_when_checksum_matches(tmp_path, monkeypatch):
    source = bninception.BNInception()
    state = dict(source.state_dict())
    state["last_linear.weight"] = torch.zeros(1000, 1024)
    path = tmp_path / "bn_inception.pth"
    torch.save(state, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(bninception, "WEIGHTS_SHA256", digest)
    net = EmbeddingNet("bninception", 8, pretrained=True, weights_path=str(path))
    for key, value in source.state_dict().items():
        torch.testing.assert_close(net.trunk.state_dict()[key], value)


def test_bninception_weights_with_wrong_checksum_are_refused(tmp_path):
    path = tmp_path / "bn_inception.pth"
    torch.save({"x": torch.zeros(1)}, path)
    with pytest.raises(DmlbenchError, match="is not the published 52deb473314542a5c2f87e9e6f26f4ca42fe863d15f986414dbae8c2dfdd2353.*left untouched"):
        EmbeddingNet("bninception", 8, pretrained=True, weights_path=str(path))
    assert path.exists()  # the user's own file


def test_bninception_checks_the_full_sha256_not_a_prefix(tmp_path, monkeypatch):
    path = tmp_path / "bn_inception.pth"
    torch.save(dict(bninception.BNInception().state_dict()), path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(bninception, "WEIGHTS_SHA256", digest[:9] + "0" * 55)  # same prefix
    with pytest.raises(DmlbenchError, match="is not the published"):
        EmbeddingNet("bninception", 8, pretrained=True, weights_path=str(path))


def test_bad_cached_weights_are_set_aside(tmp_path, monkeypatch):
    from dmlbench.models import weights

    monkeypatch.setattr(weights, "cache_dir", lambda: tmp_path)
    cached = tmp_path / "bn_inception-52deb4733.pth"
    torch.save({"x": torch.zeros(1)}, cached)
    with pytest.raises(DmlbenchError, match="renamed to \\*.corrupt"):
        EmbeddingNet("bninception", 8, pretrained=True)
    assert not cached.exists() and cached.with_suffix(".pth.corrupt").exists()


def test_offline_torchvision_weights_say_where_to_put_the_file(monkeypatch):
    import torchvision.models._api as api

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(api, "load_state_dict_from_url", offline)
    with pytest.raises(DmlbenchError, match=r"place it at .*resnet18-f37072fd\.pth"):
        EmbeddingNet("resnet18", 8, pretrained=True)


def test_frozen_batchnorm_keeps_statistics():
    net = EmbeddingNet("small_cnn", 8, pretrained=False, frozen_bn=True).train()
    bn = next(m for m in net.trunk.modules() if isinstance(m, torch.nn.BatchNorm2d))
    before = bn.running_mean.clone()
    net(torch.rand(4, 3, 32, 32))
    torch.testing.assert_close(bn.running_mean, before)
    assert not bn.weight.requires_grad


def test_head_learning_rate_multiplier():
    net = EmbeddingNet("small_cnn", 8, pretrained=False)
    groups = net.parameter_groups(1e-4, 10.0)
    assert groups[0]["lr"] == 1e-4 and groups[1]["lr"] == pytest.approx(1e-3)
    assert groups[1]["params"] == list(net.head.parameters())


def test_unknown_backbone_is_named():
    from dmlbench.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown backbone 'resnet51'"):
        EmbeddingNet("resnet51", 8, pretrained=False)


def test_every_backbone_moves_to_a_device_and_converts_its_dtype():
    """`.to()` goes through nn.Module._apply: a backbone must not shadow it (BN-Inception once
    did, and every BN-Inception run would have failed at its start)."""
    for backbone in ("small_cnn", "resnet18", "googlenet", "bninception"):
        model = models.build({"backbone": backbone, "pretrained": False, "weights": None,
                              "embedding_dim": 8, "pooling": "avg", "frozen_bn": False})
        model.to("cpu").to(torch.float64).to(torch.float32)
