"""Images per second through decode + resize + augment: full-size JPEGs, the pre-resized cache
and the decoded-image store (crop and flip on the whole batch), per loader worker count.

Fixture images are written at the real datasets' typical resolution (CUB/SOP photos are about
500 × 375 px); the cache is built by the suite's own `cache` step (shorter side 256), the store
by its `store` step (256 × 256) from the cache.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from PIL import Image

from dmlbench.data import batches, cache, draws, manifest, store
from dmlbench.run_config import RunConfig


def write_images(folder: Path, count: int, size=(500, 375), seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(count):
        pixels = rng.integers(0, 255, size=(size[1], size[0], 3), dtype=np.uint8)
        # smooth content compresses like a photo, unlike pure noise
        pixels = (pixels // 32 * 32).astype(np.uint8)
        path = folder / "full" / f"{n:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(path, quality=90)
        rows.append({"path": f"full/{n:05d}.jpg", "label": n % 10, "split": "train", "super": ""})
    table = pd.DataFrame(rows)
    manifest.write(table, folder / "manifest.csv")
    return folder / "manifest.csv"


def images_per_second(
    manifest_path: Path, workers: int, input_cfg: dict, samples: int, passes: int = 2, store_folder: Path | None = None
) -> dict:
    """Training images per second in steady state (persistent workers, after a warm-up pass):
    `loader`, the batches the workers deliver ready for the device (the store's still uint8, its
    crop and flip are device work), and `cpu_batch`, through `device_batch` on this CPU too."""
    table = manifest.read(manifest_path)
    cfg = RunConfig.from_dict(
        {
            "data": {"manifest": str(manifest_path), "store": str(store_folder) if store_folder else None},
            "input": input_cfg,
        }
    )
    data = batches.split_images(table, table.index, manifest_path.parent, cfg, train=True)
    sampler = torch.utils.data.RandomSampler(data, num_samples=samples, generator=torch.Generator().manual_seed(0))
    keyed = draws.KeyedBatches(
        torch.utils.data.BatchSampler(sampler, 32, drop_last=False), seed=0, stream=draws.TRAINING
    )
    loader = batches.loader(data, batch_sampler=keyed, num_workers=workers, persistent_workers=workers > 0)
    cpu = torch.device("cpu")
    sum(1 for _ in loader)  # warm-up: worker start, page cache
    rates = {"loader": 0.0, "cpu_batch": 0.0}
    for _ in range(passes):
        for kind in rates:
            start = time.perf_counter()
            count = sum(len(data.device_batch(b, cpu)[0]) if kind == "cpu_batch" else len(b[1]) for b in loader)
            rates[kind] = max(rates[kind], count / (time.perf_counter() - start))
    return rates


def run(count: int = 400, workers=(1, 2), samples: int = 1600) -> list[dict]:
    input_cfg = {"resize": 256, "crop": 224, "padding": 0, "flip": True}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        full = write_images(Path(tmp), count)
        cached = Path(tmp) / "cache256" / "manifest.csv"
        cache.build(full, cached, 256)
        stored = Path(tmp) / "cache256" / "store256"
        store.build(cached, stored, 256, log=lambda m: None)
        for w in workers:
            full_rate = images_per_second(full, w, input_cfg, samples)
            cache_rate = images_per_second(cached, w, input_cfg, samples)
            store_rate = images_per_second(cached, w, input_cfg, samples, store_folder=stored)
            row = {"workers": w}
            for kind in ("loader", "cpu_batch"):
                row[kind] = {
                    "full_size_images_per_s": full_rate[kind],
                    "cached_images_per_s": cache_rate[kind],
                    "store_images_per_s": store_rate[kind],
                    "store_over_cache": store_rate[kind] / cache_rate[kind],
                    "store_over_full": store_rate[kind] / full_rate[kind],
                }
                r = row[kind]
                print(
                    f"input pipeline ({kind}), {w} workers: full-size {r['full_size_images_per_s']:.0f} img/s, "
                    f"cache {r['cached_images_per_s']:.0f} img/s, store {r['store_images_per_s']:.0f} img/s "
                    f"(× {r['store_over_cache']:.1f} the cache, × {r['store_over_full']:.1f} full-size)",
                    flush=True,
                )
            rows.append(row)
    return rows


if __name__ == "__main__":
    run()


SOP_IMAGES = 120_053


def decoding_rates(count: int = 600, workers=(1, 2)) -> list[dict]:
    """The cache step (full-size JPEG → shorter side 256) and the store step (cache → 256 × 256)
    on `count` photo-sized images with each worker count: images per second, per worker, and
    the minutes SOP's 120,053 images would take at that rate."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        full = write_images(Path(tmp), count)
        for n in workers:
            cached = Path(tmp) / f"cache-{n}" / "manifest.csv"
            start = time.perf_counter()
            cache.build(full, cached, 256, workers=n)
            cache_rate = count / (time.perf_counter() - start)
            start = time.perf_counter()
            store.build(cached, cached.parent / "store256", 256, log=lambda m: None, workers=n)
            store_rate = count / (time.perf_counter() - start)
            rows.append(
                {
                    "workers": n,
                    "cache_images_per_s": cache_rate,
                    "store_images_per_s": store_rate,
                    "cache_per_worker": cache_rate / n,
                    "store_per_worker": store_rate / n,
                    "sop_minutes": SOP_IMAGES / cache_rate / 60 + SOP_IMAGES / store_rate / 60,
                }
            )
    return rows
