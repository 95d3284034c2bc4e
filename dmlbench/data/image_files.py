"""Opening image files under a limit on pixels per image, PIL's guard against decompression bombs
(an image file that decodes to more pixels than memory holds), raised by `data.max_image_pixels`.
An image over the limit is refused naming the file, its size and the setting."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from dmlbench.core.errors import DatasetError

PIL_LIMIT = 2 * Image.MAX_IMAGE_PIXELS  # PIL refuses images of more pixels than this (178,956,970)
_limit = PIL_LIMIT  # this process's, and its forked decoding workers'


def set_limit(max_pixels: int | None) -> None:
    """The limit of `open_image` in this process (and the workers it forks); None: PIL's."""
    global _limit
    _limit = int(max_pixels or PIL_LIMIT)


def open_image(path: Path, max_pixels: int | None = None) -> Image.Image:
    """The image at `path` (lazily decoded, as `Image.open`); more than `max_pixels` pixels (the
    limit `set_limit` gave when None) stops with the file, its size and what to do."""
    limit = int(max_pixels or _limit)
    Image.MAX_IMAGE_PIXELS = None  # the check below replaces PIL's, whose error names no file
    image = Image.open(path)
    width, height = image.size
    if width * height > limit:
        image.close()
        raise DatasetError(
            f"image {path} is {width:,} × {height:,} = {width * height:,} pixels "
            f"({Path(path).stat().st_size / 2**20:.1f} MiB on disk), over the limit of {limit:,} pixels "
            f"per image (PIL's guard against decompression bombs). If the image is genuine, raise the "
            f"limit with the setting data.max_image_pixels (e.g. --config 'data={{max_image_pixels: "
            f"{width * height}}}'; decoding it needs about {3 * width * height / 2**30:.1f} GiB of memory); "
            f"otherwise replace or remove the file"
        )
    return image
