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

from dmlbench.data import batches, cache, manifest, store


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


def images_per_second(manifest_path: Path, workers: int, input_cfg: dict, passes: int = 2,
                      store_folder: Path | None = None) -> float:
    """Training images per second through the loader and `device_batch` (on the CPU here)."""
    table = manifest.read(manifest_path)
    cfg = {"data": {"manifest": str(manifest_path), "store": str(store_folder) if store_folder else None},
           "input": input_cfg}
    data = batches.split_images(table, table.index, manifest_path.parent, cfg, train=True)
    loader = torch.utils.data.DataLoader(data, batch_size=32, num_workers=workers, shuffle=False)
    cpu = torch.device("cpu")
    best = 0.0
    for _ in range(passes):
        start = time.perf_counter()
        count = sum(len(data.device_batch(loaded, cpu)[0]) for loaded in loader)
        best = max(best, count / (time.perf_counter() - start))
    return best


def run(count: int = 400, workers=(1, 2)) -> list[dict]:
    input_cfg = {"resize": 256, "crop": 224, "padding": 0, "flip": True}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        full = write_images(Path(tmp), count)
        cached = Path(tmp) / "cache256" / "manifest.csv"
        cache.build(full, cached, 256)
        stored = Path(tmp) / "cache256" / "store256"
        store.build(cached, stored, 256, log=lambda m: None)
        for w in workers:
            full_rate = images_per_second(full, w, input_cfg)
            cache_rate = images_per_second(cached, w, input_cfg)
            store_rate = images_per_second(cached, w, input_cfg, store_folder=stored)
            rows.append({"workers": w, "full_size_images_per_s": full_rate,
                         "cached_images_per_s": cache_rate, "store_images_per_s": store_rate,
                         "speed_up": cache_rate / full_rate, "store_over_cache": store_rate / cache_rate,
                         "store_over_full": store_rate / full_rate})
            print(f"input pipeline, {w} workers: full-size {full_rate:.0f} img/s, cache "
                  f"{cache_rate:.0f} img/s, store {store_rate:.0f} img/s (× {store_rate / cache_rate:.1f} "
                  f"the cache, × {store_rate / full_rate:.1f} full-size)", flush=True)
    return rows


if __name__ == "__main__":
    run()
