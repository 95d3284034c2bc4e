"""Image datasets over a manifest, with the papers' train and test transforms."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch
from PIL import UnidentifiedImageError

from dmlbench.data import draws
from dmlbench.data.image_files import open_image
from dmlbench.core.errors import DatasetError
from dmlbench.core.io import set_aside
from dmlbench.run_config import Input


class ManifestImages(torch.utils.data.Dataset):
    """Images of one split of a manifest; returns (image tensor, label). An item is an index, or
    for training an (index, draw key) pair (`draws.KeyedBatches`), which seeds its crop and flip.

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

    def __getitem__(self, item):
        index, key = item if isinstance(item, tuple) else (item, None)
        try:
            with open_image(self.paths[index], self.max_pixels) as image:
                return self.transform(image.convert("RGB"), key), int(self.labels[index])
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


class TrainTransform:
    """Resize to resize×resize, random crop (with optional padding), optional horizontal flip:
    torchvision's Resize, RandomCrop and RandomHorizontalFlip, with the crop corner and the flip
    drawn from the image's own key (`draws.draw_crop_flip`), as the store path draws them."""

    def __init__(self, cfg: Input):
        self.cfg = cfg

    def __call__(self, image, key: int | None):
        from torchvision.transforms import functional as TF  # 2-3 s to import: only where images are decoded

        if key is None:
            draws.unkeyed([0])  # the message: training images are drawn by key
        cfg = self.cfg
        image = TF.resize(image, [cfg.resize, cfg.resize])
        if cfg.padding:
            image = TF.pad(image, cfg.padding)
        top, left, flipped = draws.draw_crop_flip(key, cfg.resize, cfg.crop, cfg.padding, cfg.flip)
        image = TF.crop(image, top, left, cfg.crop, cfg.crop)
        return TF.to_tensor(TF.hflip(image) if flipped else image)


class TestTransform:
    """Resize to resize×resize and take the centre crop (an evaluation item has no draw key)."""

    def __init__(self, cfg: Input):
        from torchvision import transforms

        self.steps = transforms.Compose(
            [transforms.Resize((cfg.resize, cfg.resize)), transforms.CenterCrop(cfg.crop), transforms.ToTensor()]
        )

    def __call__(self, image, key: int | None = None):
        return self.steps(image)
