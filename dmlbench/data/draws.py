"""Where a training image's random crop and flip come from: a generator of its own, seeded by a
key of (the run's seed, the stream, the step, the image's slot in the step's batch). The batch
sampler hands each index on with its key (`KeyedBatches`), so the draws are the same whichever
process decodes the image: any number of loader workers, the store path or the per-image path,
an uninterrupted run or one resumed at an epoch boundary. Streams: an epoch's number for training
(`TRAINING`), a probe's own beyond it (`probe_stream`)."""

from __future__ import annotations

import hashlib
import struct

import torch

TRAINING = 0  # stream of epoch e: TRAINING + e
PROBE = 1 << 32  # stream of the probe after epoch e: PROBE + e (never an epoch's)


def probe_stream(epoch: int) -> int:
    """The stream of the probe recorded after `epoch` finished epochs."""
    return PROBE + epoch


def draw_key(seed: int, stream: int, step: int, slot: int) -> int:
    """The seed of one image's augmentation: a hash of the run's seed, the stream (the epoch, or a
    probe's own), the step within it and the image's place in the step's batch."""
    packed = struct.pack("<4q", seed, stream, step, slot)
    return int.from_bytes(hashlib.blake2b(packed, digest_size=8).digest(), "little") >> 1


class KeyedBatches:
    """A batch sampler that hands each index on with its draw key, `[(index, key), …]` per batch,
    so a training image's augmentation depends on where it stands in the stream, not on which
    process (loader worker) decodes it."""

    def __init__(self, sampler, seed: int, stream: int):
        self.sampler, self.seed, self.stream = sampler, seed, stream

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        for step, batch in enumerate(self.sampler):
            yield [(int(index), draw_key(self.seed, self.stream, step, slot)) for slot, index in enumerate(batch)]


def unkeyed(items) -> tuple[list[int], list[int]]:
    """The indices and draw keys of a training batch; a plain index has no key and is refused."""
    if not all(isinstance(item, tuple) for item in items):
        raise TypeError("training images are drawn by key: give the loader a draws.KeyedBatches sampler")
    return [index for index, _ in items], [key for _, key in items]


def draw_crop_flip(key: int, side: int, crop: int, padding: int, flip: bool) -> tuple[int, int, bool]:
    """torchvision's RandomCrop(crop, padding) then RandomHorizontalFlip, draw for draw, from the
    generator of `key`: the crop's top and left corner in the padded image, and the flip."""
    generator = torch.Generator().manual_seed(key)
    padded = side + 2 * padding
    top = left = 0
    if padded != crop:
        top = int(torch.randint(0, padded - crop + 1, size=(1,), generator=generator).item())
        left = int(torch.randint(0, padded - crop + 1, size=(1,), generator=generator).item())
    flipped = bool(torch.rand(1, generator=generator) < 0.5) if flip else False
    return top, left, flipped
