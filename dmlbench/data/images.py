"""Image datasets over a manifest, with the papers' train and test transforms."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch
from PIL import UnidentifiedImageError

from dmlbench.data.image_files import open_image
from dmlbench.core.errors import DatasetError
from dmlbench.core.io import set_aside
from dmlbench.run_config import Input


class ManifestImages(torch.utils.data.Dataset):
    """Images of one split of a manifest; returns (image tensor, label).

    `derived_manifest`: the manifest of a cache the suite made; an unreadable image there is a
    damaged copy, so that manifest is set aside and the cache step makes the cache again.
    `max_pixels`: images of more pixels are refused (`data.max_image_pixels`; None: PIL's limit)."""

    def __init__(
        self,
        table: pd.DataFrame,
        base: Path,
        transform,
        derived_manifest: Path | None = None,
        max_pixels: int | None = None,
    ):
        self.paths = [Path(base) / p for p in table["path"]]
        self.labels = table["label"].to_numpy()
        self.supers = table["super"].to_numpy() if "super" in table else None
        self.transform = transform
        self.derived_manifest = derived_manifest
        self.max_pixels = max_pixels

    collate = staticmethod(torch.utils.data.default_collate)

    def __len__(self) -> int:
        return len(self.paths)

    def device_batch(self, loaded, device, memory_format=torch.contiguous_format):
        """(images on `device`, labels) of a loaded batch."""
        batch, labels = loaded
        return batch.to(device, non_blocking=True, memory_format=memory_format), labels

    def __getitem__(self, index: int):
        try:
            with open_image(self.paths[index], self.max_pixels) as image:
                return self.transform(image.convert("RGB")), int(self.labels[index])
        except (OSError, UnidentifiedImageError, SyntaxError) as error:
            if self.derived_manifest is not None:
                raise DatasetError(
                    f"cached image {self.paths[index]} cannot be read ({error}); "
                    f"{self._set_cache_aside()}Rerun: the cache step makes the cache "
                    f"again"
                ) from None
            raise DatasetError(
                f"image {self.paths[index]} cannot be read ({error}); replace it with an intact copy and rerun"
            ) from None

    def _set_cache_aside(self) -> str:
        try:
            moved = set_aside(self.derived_manifest)
        except FileNotFoundError:  # another loader worker was first
            return "the cache was set aside. "
        return f"the cache's manifest was set aside as {moved.name}. "


def train_transform(cfg: Input):
    """Resize to resize×resize, random crop (with optional padding), optional horizontal flip."""
    from torchvision import transforms  # 2-3 s to import: only where images are decoded one by one

    steps = [transforms.Resize((cfg.resize, cfg.resize)), transforms.RandomCrop(cfg.crop, padding=cfg.padding or None)]
    if cfg.flip:
        steps.append(transforms.RandomHorizontalFlip())
    return transforms.Compose(steps + [transforms.ToTensor()])


def test_transform(cfg: Input):
    """Resize to resize×resize and take the centre crop."""
    from torchvision import transforms

    return transforms.Compose(
        [transforms.Resize((cfg.resize, cfg.resize)), transforms.CenterCrop(cfg.crop), transforms.ToTensor()]
    )
