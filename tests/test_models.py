"""Backbones, the embedding head, weight loading and its failure messages."""

import hashlib
import urllib.error
from pathlib import Path

import pytest
import torch

from dmlbench import models
from dmlbench.core.errors import DmlbenchError
from dmlbench.models import bninception, timm_trunks, weights
from dmlbench.models.backbones import BACKBONES
from dmlbench.models.embedding import EmbeddingNet
from dmlbench.run_config import Model


@pytest.mark.parametrize("backbone", [n for n in BACKBONES.names() if n not in timm_trunks.TRUNKS])
def test_embeddings_are_unit_vectors(backbone):
    """Every registered backbone but timm's (tests/test_timm_trunks.py) builds without weights and
    embeds into unit vectors of the size asked for."""
    size = 96
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
    with pytest.raises(
        DmlbenchError,
        match="is not the published 52deb473314542a5c2f87e9e6f26f4ca42fe863d15f986414dbae8c2dfdd2353.*left untouched",
    ):
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


def test_offline_torchvision_weights_say_where_to_put_the_file(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(weights, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(torch.hub, "download_url_to_file", offline)
    with pytest.raises(DmlbenchError, match=r"place it at .*resnet18-f37072fd\.pth"):
        EmbeddingNet("resnet18", 8, pretrained=True)


class RunsCode:
    """A pickle whose loading runs a command (writes a marker file)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def test_a_code_running_pickle_in_torchvisions_cache_is_never_run(tmp_path, monkeypatch):
    """The file sits where torch.hub caches resnet18's weights, under the published name."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    cached = tmp_path / "torch" / "hub" / "checkpoints" / "resnet18-f37072fd.pth"
    cached.parent.mkdir(parents=True)
    marker = tmp_path / "ran"
    torch.save({"fc.weight": RunsCode(marker)}, cached)
    with pytest.raises(DmlbenchError, match="resnet18-f37072fd.pth: sha256 .* is not the published f37072fd"):
        EmbeddingNet("resnet18", 8, pretrained=True)
    assert not marker.exists()
    # the same pickle under a matching digest: still not run (read with weights_only)
    digest = hashlib.sha256(cached.with_suffix(".pth.corrupt").read_bytes()).hexdigest()
    url = f"https://download.pytorch.org/models/resnet18-{digest[:8]}.pth"
    cached.with_suffix(".pth.corrupt").rename(cached.parent / Path(url).name)
    with pytest.raises(DmlbenchError, match="not a plain weights file"):
        weights.load_checked(url, digest[:8])
    assert not marker.exists()


def test_torchvision_weights_load_when_their_digest_matches(tmp_path, monkeypatch):
    import torchvision

    torch.manual_seed(0)
    source = torchvision.models.resnet18(weights=None)
    path = tmp_path / "resnet18-f37072fd.pth"
    torch.save(source.state_dict(), path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.rename(tmp_path / f"resnet18-{digest[:8]}.pth")
    monkeypatch.setattr(weights, "cache_dir", lambda: tmp_path)
    published = type("Weights", (), {"url": f"https://download.pytorch.org/models/resnet18-{digest[:8]}.pth"})
    net = weights.torchvision_weights(torchvision.models.resnet18, published)
    for key, value in source.state_dict().items():
        torch.testing.assert_close(net.state_dict()[key], value)


def test_pretrained_googlenet_sees_its_input_as_torchvisions_googlenet_does(monkeypatch):
    """The ImageNet GoogLeNet weights expect torchvision's input transform: the trunk's pooled
    features equal torchvision's own `googlenet` (fc removed) on the same normalised image."""
    import torchvision

    torch.manual_seed(0)
    reference = torchvision.models.googlenet(weights=None, aux_logits=True, transform_input=True, init_weights=True)
    monkeypatch.setattr(weights, "load_checked", lambda url, digest: reference.state_dict())
    net = EmbeddingNet("googlenet", 8, pretrained=True).eval()
    reference.fc = torch.nn.Identity()
    reference.eval()
    image = torch.rand(2, 3, 64, 64)
    normalised = (image - net.mean) / net.std
    with torch.no_grad():
        ours = net.trunk(net._prepare_input(image)).mean(dim=(2, 3))
        theirs = reference(normalised)
    torch.testing.assert_close(ours, theirs)
    assert net.trunk.net.aux1 is None  # the auxiliary heads are not part of the trunk


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
    from dmlbench.core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown backbone 'resnet51'"):
        EmbeddingNet("resnet51", 8, pretrained=False)


def test_every_backbone_moves_to_a_device_and_converts_its_dtype():
    """`.to()` goes through nn.Module._apply: a backbone must not shadow it (BN-Inception once
    did, and every BN-Inception run would have failed at its start)."""
    for backbone in ("small_cnn", "resnet18", "googlenet", "bninception"):
        model = models.build(Model(backbone=backbone, pretrained=False, embedding_dim=8))
        model.to("cpu").to(torch.float64).to(torch.float32)


def test_the_torchvision_weight_urls_are_torchvisions_own():
    import torchvision

    from dmlbench.models.backbones import BACKBONES, TORCHVISION

    for name, (enum, url) in TORCHVISION.items():
        assert url == getattr(torchvision.models, enum).IMAGENET1K_V1.url
        assert BACKBONES.get(name).weights_url == url


def test_a_training_process_on_a_small_network_imports_neither_torchvision_nor_scikit_learn():
    """Each costs every training process 2-3 s of start-up (smoke and demo start dozens)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy, torch; import dmlbench.training.train, dmlbench.fair.fold_run;"
        "from dmlbench.models.embedding import EmbeddingNet;"
        "from dmlbench.evaluation.metrics import retrieval_metrics;"
        "x = EmbeddingNet('small_cnn', embedding_dim=8, pretrained=False).eval()(torch.rand(12, 3, 32, 32));"
        "retrieval_metrics(x.detach().numpy(), numpy.arange(12) % 3, (1,));"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torchvision', 'sklearn', 'scipy'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
