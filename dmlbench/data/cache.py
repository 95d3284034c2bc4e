"""Optional pre-resized image cache: decode and shrink every image once instead of every epoch."""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

from dmlbench.data import manifest
from dmlbench.io import atomic_dir


def build(source_manifest: Path, output: Path, shorter_side: int) -> None:
    """Write every image of `source_manifest` resized so its shorter side is `shorter_side`
    (never enlarged) as JPEG (quality 95), and a manifest pointing at the copies."""
    source_manifest, output = Path(source_manifest), Path(output)
    table = manifest.read(source_manifest)
    base = source_manifest.parent
    images = output.parent / "images"
    with atomic_dir(images) as tmp:
        paths = []
        for n, rel in enumerate(table["path"]):
            with Image.open(base / rel) as image:
                image = image.convert("RGB")
                scale = shorter_side / min(image.size)
                if scale < 1:
                    size = (round(image.width * scale), round(image.height * scale))
                    image = image.resize(size, Image.Resampling.BILINEAR)
                target = Path(f"{n // 1000:04d}") / f"{n:07d}.jpg"
                (tmp / target).parent.mkdir(parents=True, exist_ok=True)
                image.save(tmp / target, quality=95)
            paths.append(str(Path("images") / target))
            if (n + 1) % 5000 == 0:
                print(f"  cached {n + 1}/{len(table)} images", file=sys.stderr)
    cached = table.copy()
    cached["path"] = paths
    manifest.write(cached, output)
