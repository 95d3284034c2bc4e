"""ImageNet weights: torchvision's own files, or the BN-Inception file, cached and checksum-verified."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch

from dmlbench.errors import DmlbenchError


def cache_dir() -> Path:
    return Path(torch.hub.get_dir()) / "checkpoints"


def torchvision_weights(builder, weights_enum):
    """Build a torchvision model with ImageNet weights, explaining what to place where when offline."""
    try:
        return builder(weights=weights_enum)
    except Exception as error:  # urllib, ssl and hash errors all mean: file not available
        filename = Path(weights_enum.url).name
        raise DmlbenchError(
            f"ImageNet weights {filename} could not be loaded ({error}). Without network, "
            f"download {weights_enum.url} elsewhere and place it at {cache_dir() / filename}."
        ) from None


def load_checked(url: str, sha256: str, local_path: str | None = None) -> dict:
    """State dict from `local_path` (the user's file, `model.weights`) or the cache (downloaded from
    `url` if missing), verified by its full sha256. A bad cached copy is renamed to `*.corrupt`;
    the user's own file is never touched."""
    path = Path(local_path) if local_path else cache_dir() / Path(url).name
    if not path.exists():
        if local_path:
            raise DmlbenchError(f"model.weights = {path} does not exist")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.hub.download_url_to_file(url, str(path), progress=True)
        except Exception as error:
            raise DmlbenchError(
                f"weights {url} could not be downloaded ({error}). Download the file elsewhere and "
                f"place it at {path}, or set model.weights to its path."
            ) from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        if local_path:
            raise DmlbenchError(f"{path}: sha256 {digest} is not the published {sha256}; this is not "
                                f"the expected weights file (left untouched). Use an intact copy.")
        os.replace(path, path.with_suffix(path.suffix + ".corrupt"))
        raise DmlbenchError(
            f"{path}: sha256 {digest} is not the published {sha256}; the file is not the expected "
            f"weights (renamed to *.corrupt). Place an intact copy there, or download {url} again."
        )
    return torch.load(path, map_location="cpu", weights_only=True)
