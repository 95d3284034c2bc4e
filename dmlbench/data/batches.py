"""The images of a split as a DataLoader dataset: decoded per image from files (`ManifestImages`),
or sliced from the decoded-image store with crop, flip and scaling applied to the whole batch on
the run's device (`StoreImages`). Both give the loop (images, labels) through `device_batch`, and
the same crops and flips: a training image's crop corner and flip are drawn from a generator of
its own, seeded by a key of (seed, stream, step, slot) that `KeyedBatches` hands along with its
index, so neither the number of loader workers nor the path changes a draw. Build their loaders
with `loader`, which uses each dataset's own `collate` (the store reads a whole batch at once)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from dmlbench.data import images, store
from dmlbench.data.draws import draw_crop_flip, unkeyed
from dmlbench.run_config import Input, RunConfig


def loader(data, **options) -> torch.utils.data.DataLoader:
    """A DataLoader over `data` (ManifestImages or StoreImages) with the dataset's collate."""
    return torch.utils.data.DataLoader(data, collate_fn=data.collate, **options)


def split_images(table, rows, base: Path, cfg: RunConfig, train: bool):
    """The images of `table.loc[rows]` for training (random crop, flip) or evaluation (centre
    crop), from the store when the run has one (`cfg.data["store"]`)."""
    subset = table.loc[rows]
    folder = cfg.data.get("store")
    if folder:
        pixels = store.open_pixels(Path(folder), Path(cfg.data["manifest"]), cfg.input.resize)
        return StoreImages(pixels, np.asarray(rows), subset, cfg.input, train)
    transform = images.TrainTransform(cfg.input) if train else images.TestTransform(cfg.input)
    source = Path(cfg.data["manifest"])
    derived = source if re.fullmatch(r"cache\d+", source.parent.name) else None  # the cache step's
    return images.ManifestImages(
        subset, base, transform, derived_manifest=derived, max_pixels=cfg.data.get("max_image_pixels")
    )


class StoreImages(torch.utils.data.Dataset):
    """Rows of the store as uint8 (side × side × 3), read a batch at a time, with each image's
    crop corner and flip."""

    def __init__(self, pixels: np.ndarray, rows: np.ndarray, subset, input_cfg: Input, train: bool):
        self.pixels, self.rows = pixels, rows
        self.labels = subset["label"].to_numpy()
        self.supers = subset["super"].to_numpy() if "super" in subset else None
        self.crop, self.flip, self.train = input_cfg.crop, input_cfg.flip, train
        self.padding = input_cfg.padding if train else 0
        self.side = pixels.shape[1]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitems__(self, items: list):
        """One batch: its pixels in one read of the store (into shared memory in a loader worker,
        so the batch reaches the main process without another copy), labels and per-image draws
        (training: `items` are (index, key) pairs, see `KeyedBatches`; evaluation: indices)."""
        if self.train:
            items, keys = unkeyed(items)
        indices = np.asarray(items)
        pixels = torch.empty((len(indices), self.side, self.side, 3), dtype=torch.uint8)
        if torch.utils.data.get_worker_info() is not None:
            pixels.share_memory_()
        np.take(self.pixels, self.rows[indices], axis=0, out=pixels.numpy())
        centre = round((self.side - self.crop) / 2.0)
        if self.train:
            draws = [draw_crop_flip(key, self.side, self.crop, self.padding, self.flip) for key in keys]
        else:
            draws = [(centre, centre, False)] * len(indices)
        top, left, flip = (torch.tensor(column) for column in zip(*draws))
        return pixels, torch.from_numpy(self.labels[indices]), top, left, flip

    @staticmethod
    def collate(batch):
        """`__getitems__` returns the batch whole."""
        return batch

    def device_batch(self, loaded, device, memory_format=torch.contiguous_format):
        pixels, labels, top, left, flip = loaded
        pixels = pixels.to(device, non_blocking=True)
        batch = crop_and_flip(pixels, top.to(device), left.to(device), flip.to(device), self.crop, self.padding)
        return batch.contiguous(memory_format=memory_format), labels


# uint8 → [0, 1] exactly as ToTensor computes it on the CPU. On a GPU, PyTorch divides by a
# scalar as a multiplication by its reciprocal, which differs in the last bit for some values
# (BN-Inception's ×255 then showed it in the losses); a table lookup gives ToTensor's values.
UNIT_VALUES = torch.arange(256, dtype=torch.uint8).to(torch.float32).div(255)


def to_unit(pixels: torch.Tensor) -> torch.Tensor:
    """uint8 pixels as float32 in [0, 1], bit for bit ToTensor's values, on the pixels' device."""
    table = UNIT_VALUES.to(pixels.device)
    return table.index_select(0, pixels.reshape(-1).to(torch.int32)).view(pixels.shape)


def crop_and_flip(
    pixels: torch.Tensor,
    top: torch.Tensor,
    left: torch.Tensor,
    flip: torch.Tensor,
    crop: int,
    padding: int,
    gather: bool | None = None,
) -> torch.Tensor:
    """From B × side × side × 3 uint8: zero-pad, crop each image at its own corner, mirror the
    flipped ones, and return B × 3 × crop × crop floats in [0, 1], the per-image transforms'
    result for the whole batch. One gather (`gather`; by default on a GPU), else one copy per
    image (by default on the CPU)."""
    if padding:
        pixels = F.pad(pixels, (0, 0, padding, padding, padding, padding))
    if gather is None:
        gather = pixels.device.type != "cpu"
    if not gather:  # one pass per image: crop, mirror, to channels-first float
        out = torch.empty((len(pixels), 3, crop, crop), dtype=torch.float32)
        for image, target, t, l, mirrored in zip(pixels, out, top.tolist(), left.tolist(), flip.tolist()):
            view = image[t : t + crop, l : l + crop].permute(2, 0, 1)
            target.copy_(view.flip(2) if mirrored else view)
        return out.div_(255)
    steps = torch.arange(crop, device=pixels.device)
    ys, xs = top[:, None] + steps, left[:, None] + steps
    which = torch.arange(len(pixels), device=pixels.device)[:, None, None]
    out = pixels[which, ys[:, :, None], xs[:, None, :]]
    if flip.any():
        out[flip] = out[flip].flip(2)
    return to_unit(out.permute(0, 3, 1, 2).contiguous())
