"""Getting a dataset's files: the user's own first, then every source of every layout in order,
with resume, retries, an HTML-page check and the published size and checksums; safe extraction.

A download goes to `<file>.part` and is resumed with an HTTP Range request; a server that ignores
the range (answers 200) or an FTP server (no HTTP status) restarts it from zero, so a partial file
is never glued to a fresh one. A download that fails its checks is removed and the next source is
tried; when every source fails, the error names each one and why. Files the run did not download
(the user's, or placed by hand) are checked and reported, never removed.

A file without a published sha256 (the Kaggle Cars copy, In-Shop's and VehicleID's files, and
md5-only sources) is pinned on first use: the sha256 of the first copy is written beside it
(`<file>.sha256`) and every later use is checked against it.
"""

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

from dmlbench.data.datasets import DatasetSpec, Layout, SourceFile
from dmlbench.core.errors import ChecksumError, DatasetError
from dmlbench.core.io import atomic_dir, atomic_path

CHUNK = 1 << 20
HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<!--")


class SourceError(DatasetError):
    """One source of a file did not deliver it (dead address, an HTML page, a wrong checksum)."""


def digest(path: Path, algorithm: str) -> str:
    value = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            value.update(block)
    return value.hexdigest()


def _problem(path: Path, source: SourceFile) -> str | None:
    """What is wrong with `path` against the published size and checksums, or None."""
    size = path.stat().st_size
    if source.size is not None and size != source.size:
        return f"{size:,} bytes, not the published {source.size:,}"
    for algorithm in ("md5", "sha256"):
        published = getattr(source, algorithm)
        if published and (found := digest(path, algorithm)) != published:
            return f"{algorithm} {found} differs from the published {published}"
    return None


def pin_path(path: Path) -> Path:
    """Where the sha256 of a file's first copy is kept."""
    return path.with_name(path.name + ".sha256")


def _first_use_problem(path: Path, source: SourceFile) -> str | None:
    """For a file without a published sha256: record its sha256 at first use, else compare."""
    if source.sha256:
        return None
    found = digest(path, "sha256")
    pin = pin_path(path)
    if pin.exists():
        recorded = pin.read_text().split()[0] if pin.read_text().split() else ""
        if found != recorded:
            return (
                f"sha256 {found} differs from {recorded or 'nothing'}, recorded in {pin} when the "
                f"file was first used (no digest is published for it); if you replaced it on "
                f"purpose, delete {pin.name}"
            )
        return None
    try:
        with atomic_path(pin) as tmp:
            tmp.write_text(f"{found}  {path.name}\n")
        print(f"  {path.name}: no published sha256; recorded {found[:16]}… in {pin} for later uses", file=sys.stderr)
    except OSError as error:
        print(
            f"  warning: {path.name} has no published sha256 and {pin} cannot be written "
            f"({error}); later uses cannot be checked",
            file=sys.stderr,
        )
    return None


def verify(path: Path, source: SourceFile, owned: bool = False) -> None:
    """Raise `ChecksumError` when `path` does not have the published size and checksums (or, with
    none published, the sha256 recorded at its first use). A file this run downloaded (`owned`) is
    deleted; any other (the user's own, or one placed by hand) is left as it is."""
    problem = _problem(path, source) or _first_use_problem(path, source)
    if problem is None:
        return
    if owned:
        path.unlink()
        raise ChecksumError(f"{path}: {problem}; the download was corrupt or incomplete and has been removed.")
    raise ChecksumError(
        f"{path}: {problem}. The file was not downloaded by this run and is left "
        f"untouched: replace it with an intact copy (or delete it, to download it "
        f"anew)."
    )


def download(
    url: str, dest: Path, source: SourceFile, retries: int = 3, timeout: float = 60.0, backoff: float = 2.0
) -> Path:
    """Fetch `url` to `dest`, resuming a `.part` file left by an interrupted run, then verify."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    for attempt in range(1, retries + 1):
        try:
            _fetch(url, part, timeout)
            break
        except urllib.error.HTTPError as error:  # the server answered: retrying will not help
            raise SourceError(f"HTTP {error.code} {error.reason}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as error:
            if attempt == retries:
                raise SourceError(f"{_reason(error)} after {retries} attempts") from None
            print(f"  download of {url} failed ({_reason(error)}); retry {attempt}/{retries - 1}", file=sys.stderr)
            time.sleep(backoff * attempt)
    _refuse_html(part)
    part.replace(dest)
    try:
        verify(dest, source, owned=True)
    except ChecksumError as error:
        raise SourceError(str(error)) from None
    return dest


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None) or error
    return " ".join(str(reason).split())


def _refuse_html(part: Path) -> None:
    """A sign-in, quota or virus-scan page served instead of the file."""
    with open(part, "rb") as handle:
        head = handle.read(512).lstrip().lower()
    if head.startswith(HTML_MARKERS):
        part.unlink()
        raise SourceError("the server sent an HTML page (a sign-in, quota or virus-scan page), not the file")


def _fetch(url: str, part: Path, timeout: float) -> None:
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        resumed = have and getattr(response, "status", None) == 206
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


def fetch(source: SourceFile, folder: Path, tried: list[str], **options) -> Path | None:
    """`source` in `folder`: present and intact, or downloaded from the first source that delivers
    it. Every failed source is added to `tried` (address: reason); None when all failed."""
    dest = folder / source.filename
    if dest.exists():
        verify(dest, source)  # a file placed there is never replaced behind the user's back
        return dest
    for url in source.urls:
        print(f"downloading {url} → {dest}", file=sys.stderr)
        try:
            return download(url, dest, source, **options)
        except SourceError as error:
            tried.append(f"{url}: {error}")
    if not source.urls:
        tried.append(f"{source.filename}: no public source (a manual download)")
    return None


def complete_layout(spec: DatasetSpec, folder: Path) -> Layout | None:
    """The first layout whose files are all in `folder`."""
    for layout in spec.layouts:
        if layout.files and all((folder / f.filename).exists() for f in layout.files):
            return layout
    return None


def obtain(spec: DatasetSpec, folder: Path, allow_download: bool, **options) -> list[Path]:
    """The files of one layout of `spec` in `folder`: those already there, else downloaded, layout
    by layout and source by source, until one layout is complete."""
    ready = complete_layout(spec, folder)
    if ready is not None:
        for source in ready.files:
            verify(folder / source.filename, source)
        return [folder / f.filename for f in ready.files]
    if not allow_download:
        wanted = "; or ".join(" + ".join(f.filename for f in layout.files) for layout in spec.layouts)
        raise DatasetError(
            f"{spec.title}: the files are not in {folder} and downloads are off "
            f"(data.download: false). Put {wanted} there, or set data.paths."
            f"{spec.name} to a folder that has them."
        )
    tried: list[str] = []
    for layout in spec.layouts:
        paths = []
        for source in layout.files:
            path = fetch(source, folder, tried, **options)
            if path is None:
                break
            paths.append(path)
        else:
            return paths
    manual = spec.manual.format(folder=folder) if spec.manual else ""
    raise DatasetError(
        f"{spec.title}: no source delivered the files. Tried:\n  - "
        + "\n  - ".join(tried)
        + (f"\n{manual}" if manual else "")
    )


def checked_members(archive: tarfile.TarFile, dest: Path, path: Path) -> list[tarfile.TarInfo]:
    """Every member of `archive`, after our own check (on top of tarfile's `data` filter, whose
    link handling had bypasses, e.g. CVE-2025-4517): only regular files and folders, each landing
    inside `dest`. No dataset the suite reads ships links, so any link is refused."""
    root = dest.resolve()
    members = archive.getmembers()
    for member in members:
        if not (member.isfile() or member.isdir()):
            kind = "a link" if member.issym() or member.islnk() else "not a regular file or folder"
            raise DatasetError(
                f"{path}: member {member.name!r} is {kind}; the archive is refused and "
                f"nothing was extracted. Use an intact copy from the publisher."
            )
        target = (root / member.name).resolve()
        if member.name.startswith("/") or not target.is_relative_to(root):
            raise DatasetError(
                f"{path}: member {member.name!r} would be written outside {dest}; the "
                f"archive is refused and nothing was extracted."
            )
    return members


def extract(files: list[Path], dest: Path) -> Path:
    """Unpack archives (and copy plain files) into `dest`, all or nothing. A corrupt archive is
    reported, never removed (it may be the user's own)."""
    with atomic_dir(dest) as tmp:
        for path in files:
            try:
                if path.name.endswith((".tgz", ".tar.gz", ".tar")):
                    with tarfile.open(path) as archive:
                        members = checked_members(archive, tmp, path)
                        archive.extractall(tmp, members=members, filter="data")
                elif path.suffix == ".zip":
                    with zipfile.ZipFile(path) as archive:
                        archive.extractall(tmp)
                else:
                    shutil.copy2(path, tmp / path.name)
            except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
                reason = " ".join(str(error).split())
                raise DatasetError(
                    f"{path} is not a readable archive ({reason}); nothing was extracted. Replace "
                    f"it with an intact copy (or delete it, to download it anew) and rerun."
                ) from None
    return dest
