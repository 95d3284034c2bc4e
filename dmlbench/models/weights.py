"""ImageNet weights: torchvision's own files, or the BN-Inception file, cached and checksum-verified.

No weights file is unpickled before its sha256 has been checked, and every one is read with
`torch.load(weights_only=True)`, so a file placed in the cache by someone else cannot run code.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import torch

from dmlbench.core.errors import DmlbenchError


def cache_dir() -> Path:
    return Path(torch.hub.get_dir()) / "checkpoints"


def published_digest(url: str) -> str:
    """The sha256 prefix torchvision publishes in its file names (`resnet18-f37072fd.pth`)."""
    match = re.search(r"-([0-9a-f]{8,64})\.pth$", Path(url).name)
    if match is None:
        raise DmlbenchError(f"{url}: no published sha256 in the file name; cannot verify it")
    return match.group(1)


def torchvision_weights(builder, weights_enum, **architecture):
    """A torchvision model built with `architecture` (the keyword arguments torchvision itself
    uses for these weights) and its ImageNet state dict, verified against the published sha256
    prefix and loaded without unpickling code."""
    state = load_checked(weights_enum.url, published_digest(weights_enum.url))
    net = builder(weights=None, **architecture)
    net.load_state_dict(state)
    return net


def load_checked(url: str, sha256: str, local_path: str | None = None) -> dict:
    """State dict from `local_path` (the user's file, `model.weights`) or the cache (downloaded from
    `url` if missing), verified by its sha256 (the full digest, or the published prefix where only
    that is known) before it is read. A bad cached copy is renamed to `*.corrupt`; the user's own
    file is never touched."""
    path = Path(local_path) if local_path else cache_dir() / Path(url).name
    if not path.exists():
        if local_path:
            raise DmlbenchError(f"model.weights = {path} does not exist")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.hub.download_url_to_file(url, str(path), progress=True)
        except Exception as error:
            raise DmlbenchError(
                f"ImageNet weights {url} could not be downloaded ({error}). Without network, "
                f"download the file elsewhere and place it at {path}"
                f"{', or set model.weights to its path' if path.name.startswith('bn_inception') else ''}."
            ) from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if not digest.startswith(sha256):
        if local_path:
            raise DmlbenchError(
                f"{path}: sha256 {digest} is not the published {sha256}; this is not "
                f"the expected weights file (left untouched). Use an intact copy."
            )
        os.replace(path, path.with_suffix(path.suffix + ".corrupt"))
        raise DmlbenchError(
            f"{path}: sha256 {digest} is not the published {sha256}; the file is not the expected "
            f"weights (renamed to *.corrupt). Place an intact copy there, or download {url} again."
        )
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a matching digest of a file that is not a plain state dict
        raise DmlbenchError(
            f"{path}: not a plain weights file ({error}); it was not loaded. Place an intact copy of {url} there."
        ) from None
