"""Atomic outputs: ordinary permissions under the user's umask, and a full disk named as such."""

import os

import pytest
import torch

from dmlbench.core.io import DiskFullError, atomic_dir, atomic_path, write_json

from processes import run


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_outputs_get_the_permissions_of_ordinary_files(tmp_path, umask_022):
    write_json(tmp_path / "metrics.json", {"a": 1})
    assert (tmp_path / "metrics.json").stat().st_mode & 0o777 == 0o644
    with atomic_dir(tmp_path / "images") as folder:
        (folder / "x").write_text("x")
    assert (tmp_path / "images").stat().st_mode & 0o777 == 0o755


def test_group_writable_umask_is_respected(tmp_path):
    previous = os.umask(0o002)
    try:
        write_json(tmp_path / "shared.json", {})
    finally:
        os.umask(previous)
    assert (tmp_path / "shared.json").stat().st_mode & 0o777 == 0o664


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs (root only)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], timeout=60, capture_output=True
        ).returncode
    ):
        pytest.skip("mounting a small tmpfs needs root")
    yield mount
    run(["umount", str(mount)], timeout=60, check=True)


def test_full_disk_is_named_and_the_last_checkpoint_is_kept(tiny_disk):
    checkpoint = tiny_disk / "checkpoint.pt"
    with atomic_path(checkpoint) as tmp:
        torch.save({"epochs_done": 1, "weights": torch.zeros(1000)}, tmp)
    with pytest.raises(DiskFullError, match=f"the disk holding {tiny_disk} is full .* checkpoint.pt"):
        with atomic_path(checkpoint) as tmp:
            torch.save({"epochs_done": 2, "weights": torch.zeros(1_000_000)}, tmp)
    assert torch.load(checkpoint, weights_only=True)["epochs_done"] == 1
    assert [p.name for p in tiny_disk.iterdir()] == ["checkpoint.pt"]


def test_full_disk_from_a_plain_write_is_named(tiny_disk):
    with pytest.raises(DiskFullError, match="is full"):
        write_json(tiny_disk / "big.json", {"x": "y" * 3_000_000})
    assert not list(tiny_disk.iterdir())
