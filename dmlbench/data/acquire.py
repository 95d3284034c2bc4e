"""Getting the publishers' files: download with resume, retries and checksum; safe extraction."""

from __future__ import annotations

import hashlib
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from dmlbench.data.datasets import SourceFile
from dmlbench.errors import ChecksumError, DatasetError
from dmlbench.io import atomic_dir

CHUNK = 1 << 20


def md5sum(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, md5: str | None, owned: bool = True) -> None:
    """Raise `ChecksumError` when `path` does not have checksum `md5`. A file the suite
    downloaded (`owned`) is deleted so that the next run fetches it anew; the user's own is not."""
    if md5 is None:
        return
    found = md5sum(path)
    if found == md5:
        return
    if owned:
        path.unlink()
        raise ChecksumError(
            f"{path}: md5 {found} differs from the published {md5}; the file was corrupt or "
            f"incomplete and has been removed. Run the step again to download it anew, or place "
            f"an intact copy there."
        )
    raise ChecksumError(
        f"{path}: md5 {found} differs from the published {md5}. This is your file (data.paths); "
        f"it was left untouched. Replace it with an intact copy, or remove data.paths to download it."
    )


def download(url: str, dest: Path, md5: str | None, retries: int = 3, timeout: float = 60.0,
             backoff: float = 2.0) -> Path:
    """Fetch `url` to `dest`, resuming a `.part` file left by an interrupted run, then verify."""
    if dest.exists():
        verify(dest, md5)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    for attempt in range(1, retries + 1):
        try:
            _fetch(url, part, timeout)
            break
        except (urllib.error.URLError, OSError, TimeoutError) as error:
            if attempt == retries:
                raise DatasetError(
                    f"could not download {url} after {retries} attempts ({error}). Check the "
                    f"network, or download it by hand to {dest} and rerun."
                ) from None
            print(f"  download of {url} failed ({error}); retry {attempt}/{retries - 1}",
                  file=sys.stderr)
            time.sleep(backoff * attempt)
    part.replace(dest)
    verify(dest, md5)
    return dest


def _fetch(url: str, part: Path, timeout: float) -> None:
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        resumed = have and response.status == 206
        mode = "ab" if resumed else "wb"
        total = response.headers.get("Content-Length")
        total = int(total) + (have if resumed else 0) if total else None
        done = have if resumed else 0
        last = time.monotonic()
        with open(part, mode) as handle:
            for block in iter(lambda: response.read(CHUNK), b""):
                handle.write(block)
                done += len(block)
                if time.monotonic() - last > 5:
                    last = time.monotonic()
                    share = f" ({100 * done / total:.0f}%)" if total else ""
                    print(f"  {part.name[:-5]}: {done >> 20} MiB{share}", file=sys.stderr)
    if total is not None and done != total:
        raise OSError(f"connection closed after {done} of {total} bytes")


def fetch_all(files: tuple[SourceFile, ...], folder: Path, manual: str | None,
              allow_download: bool, owned: bool = True) -> list[Path]:
    """Local paths of all `files` in `folder`, downloading the missing ones where allowed.
    `owned`: the folder is the suite's download folder, not the user's own."""
    paths = []
    for source in files:
        dest = folder / source.filename
        if dest.exists():
            verify(dest, source.md5, owned)
        elif source.url is None:
            raise DatasetError(manual.format(folder=folder) if manual else
                               f"{source.filename} is missing from {folder}")
        elif not allow_download:
            raise DatasetError(
                f"{dest} is missing and downloads are off (data.download: false). Download "
                f"{source.url} to that path, or set data.paths to a folder that has it."
            )
        else:
            print(f"downloading {source.url} → {dest}", file=sys.stderr)
            download(source.url, dest, source.md5)
        paths.append(dest)
    return paths


def extract(files: list[Path], dest: Path, owned: bool = True) -> Path:
    """Unpack archives (and copy plain files) into `dest`, all or nothing.

    A corrupt archive is reported; one the suite downloaded (`owned`) is also removed, so that
    the next run fetches it anew. The user's own files are never touched.
    """
    with atomic_dir(dest) as tmp:
        for path in files:
            try:
                if path.name.endswith((".tgz", ".tar.gz", ".tar")):
                    with tarfile.open(path) as archive:
                        archive.extractall(tmp, filter="data")
                elif path.suffix == ".zip":
                    with zipfile.ZipFile(path) as archive:
                        archive.extractall(tmp)
                else:
                    shutil.copy2(path, tmp / path.name)
            except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
                reason = " ".join(str(error).split())
                if not owned:
                    raise DatasetError(
                        f"{path} is not a readable archive ({reason}). This is your file "
                        f"(data.paths); it was left untouched: replace it with an intact copy."
                    ) from None
                path.unlink(missing_ok=True)
                raise DatasetError(
                    f"{path} is not a readable archive ({reason}); it has been removed. Rerun to "
                    f"fetch it again, or place an intact copy there."
                ) from None
    return dest
