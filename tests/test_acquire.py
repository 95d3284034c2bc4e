"""The real download code against fixture archives served on 127.0.0.1."""

import hashlib
import http.server
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from dmlbench.data import acquire, datasets, fixtures
from dmlbench.data.datasets import Layout, SourceFile
from dmlbench.data.prepare import prepare
from dmlbench.core.errors import ChecksumError, DatasetError


class Server:
    """Serves files from a folder with HTTP Range support; can cut the first response short."""

    def __init__(self, folder: Path, cut_first_after: int | None = None):
        self.folder, self.cut = folder, cut_first_after
        self.requests: list[str | None] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = outer.folder / self.path.lstrip("/")
                if not path.exists():
                    self.send_error(404)
                    return
                data = path.read_bytes()
                range_header = self.headers.get("Range")
                outer.requests.append(range_header)
                start = int(range_header.split("=")[1].split("-")[0]) if range_header else 0
                body = data[start:]
                self.send_response(206 if range_header else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if outer.cut is not None and len(outer.requests) == 1:
                    self.wfile.write(body[: outer.cut])
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture
def cub_archive(tmp_path):
    folder = tmp_path / "served"
    stats = fixtures.write("cub", folder, n_classes=4, per_class=3)
    return folder, stats


def served_cub(monkeypatch, server, archive_folder, stats, checksum, urls=None):
    spec = datasets.get("cub")
    source = SourceFile("CUB_200_2011.tgz", tuple(urls or [f"{server.url}/CUB_200_2011.tgz"]), md5=checksum)
    monkeypatch.setitem(
        datasets.DATASETS._entries, "cub", replace(spec, layouts=(Layout("publisher", (source,)),), expected=stats)
    )


def test_download_verify_extract_parse(cub_archive, tmp_path, monkeypatch):
    folder, stats = cub_archive
    with Server(folder) as server:
        served_cub(monkeypatch, server, folder, stats, md5(folder / "CUB_200_2011.tgz"))
        out = tmp_path / "data" / "real" / "cub" / "manifest.csv"
        table = prepare("cub", "real", tmp_path / "data", out)
    assert out.exists() and len(table) == 12
    assert (tmp_path / "data" / "downloads" / "cub" / "CUB_200_2011.tgz").exists()


def test_checksum_mismatch_stops_and_removes_the_file(cub_archive, tmp_path, monkeypatch):
    folder, stats = cub_archive
    with Server(folder) as server:
        served_cub(monkeypatch, server, folder, stats, "0" * 32)
        out = tmp_path / "data" / "real" / "cub" / "manifest.csv"
        with pytest.raises(DatasetError, match=r"CUB_200_2011\.tgz: md5 .* differs from the published 0{32}.*removed"):
            prepare("cub", "real", tmp_path / "data", out)
    assert not out.exists()
    assert not list((tmp_path / "data" / "downloads" / "cub").iterdir())
    assert not (out.parent / "raw").exists()


def test_interrupted_download_resumes_with_range(cub_archive, tmp_path):
    folder, _ = cub_archive
    archive = folder / "CUB_200_2011.tgz"
    with Server(folder, cut_first_after=1000) as server:
        dest = tmp_path / "CUB_200_2011.tgz"
        acquire.download(
            f"{server.url}/CUB_200_2011.tgz", dest, SourceFile("CUB_200_2011.tgz", md5=md5(archive)), backoff=0.01
        )
    assert dest.read_bytes() == archive.read_bytes()
    assert server.requests[0] is None and server.requests[1] == "bytes=1000-"


def test_unreachable_server_is_named_with_its_reason(tmp_path):
    with pytest.raises(acquire.SourceError, match="after 2 attempts"):
        acquire.download(
            "http://127.0.0.1:9/none.tgz", tmp_path / "none.tgz", SourceFile("none.tgz"), retries=2, backoff=0.01
        )


def test_corrupt_archive_is_reported_and_kept(tmp_path):
    bad = tmp_path / "CUB_200_2011.tgz"
    bad.write_bytes(b"this is not a tar archive" * 100)
    with pytest.raises(DatasetError, match="not a readable archive.*nothing was extracted"):
        acquire.extract([bad], tmp_path / "raw")
    assert bad.exists() and not (tmp_path / "raw").exists()


def test_missing_dataset_without_download(tmp_path):
    out = tmp_path / "real" / "cars" / "manifest.csv"
    with pytest.raises(
        DatasetError,
        match=r"Cars196: the files are not in .* downloads are off "
        r".*car_ims\.tgz \+ cars_annos\.mat; or cars_train\.tgz",
    ):
        prepare("cars", "real", tmp_path, out, allow_download=False)
    assert not out.exists()


def test_inshop_asks_for_the_manual_download(tmp_path):
    out = tmp_path / "real" / "inshop" / "manifest.csv"
    with pytest.raises(DatasetError, match=r"img\.zip.*list_eval_partition\.txt.*downloads/inshop"):
        prepare("inshop", "real", tmp_path, out)
    assert not out.exists()


def test_checksum_mismatch_of_the_users_own_file_leaves_it(cub_archive, tmp_path, monkeypatch):
    folder, stats = cub_archive
    mine = folder / "CUB_200_2011.tgz"
    before = mine.read_bytes()
    served_cub(monkeypatch, Server(folder), folder, stats, "0" * 32)
    out = tmp_path / "data" / "real" / "cub" / "manifest.csv"
    with pytest.raises(ChecksumError, match="not downloaded by this run and is left untouched"):
        prepare("cub", "real", tmp_path / "data", out, user_path=str(folder))
    assert mine.read_bytes() == before and not out.exists()


class Mirrors:
    """A loopback server with one path per kind of source: dead, an HTML page, the wrong file,
    the right file; optionally ignoring Range requests (answering 200 with the whole file)."""

    def __init__(self, good: bytes, ranges: bool = True):
        self.requests: list[tuple[str, str | None]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests.append((self.path, self.headers.get("Range")))
                bodies = {
                    "/good": good,
                    "/wrong": b"x" * len(good),
                    "/html": b"<!DOCTYPE html><html><body>Google Drive can't scan this file "
                    b"for viruses. <form>Download anyway</form></body></html>",
                }
                if self.path.split("?")[0] not in bodies:
                    self.send_error(404)
                    return
                body = bodies[self.path.split("?")[0]]
                start = 0
                if ranges and self.headers.get("Range"):
                    start = int(self.headers["Range"].split("=")[1].split("-")[0])
                    self.send_response(206)
                else:
                    self.send_response(200)
                self.send_header("Content-Type", "text/html" if self.path == "/html" else "application/octet-stream")
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                self.wfile.write(body[start:])

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_sources_fall_through_dead_html_and_wrong_checksum_to_a_good_one(tmp_path):
    good = b"the dataset archive " * 5000
    with Mirrors(good) as server:
        source = SourceFile(
            "data.zip",
            tuple(f"{server.url}{p}" for p in ("/dead", "/html?id=1&confirm=t", "/wrong", "/good")),
            size=len(good),
            sha256=hashlib.sha256(good).hexdigest(),
        )
        tried: list[str] = []
        path = acquire.fetch(source, tmp_path, tried, backoff=0.01)
    assert path.read_bytes() == good
    assert [t.split(": ", 1)[0] for t in tried] == [
        f"{server.url}/dead",
        f"{server.url}/html?id=1&confirm=t",
        f"{server.url}/wrong",
    ]
    assert "HTTP 404" in tried[0] and "HTML page" in tried[1] and "sha256" in tried[2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.zip"]


def test_when_every_source_fails_each_is_named(tmp_path, monkeypatch):
    good = b"archive" * 1000
    with Mirrors(good) as server:
        source = SourceFile(
            "CUB_200_2011.tgz", (f"{server.url}/dead", f"{server.url}/html"), md5=hashlib.md5(good).hexdigest()
        )
        spec = replace(datasets.get("cub"), layouts=(Layout("publisher", (source,)),))
        with pytest.raises(DatasetError) as error:
            acquire.obtain(spec, tmp_path / "downloads", allow_download=True, backoff=0.01)
    text = str(error.value)
    assert f"{server.url}/dead: HTTP 404" in text and f"{server.url}/html: the server sent an HTML page" in text
    assert not list((tmp_path / "downloads").iterdir())


def test_resume_over_a_server_without_range_support_restarts_cleanly(tmp_path):
    good = bytes(range(256)) * 4000
    part = tmp_path / "data.zip.part"
    part.write_bytes(b"stale bytes of an earlier attempt" * 10)
    with Mirrors(good, ranges=False) as server:
        acquire.download(
            f"{server.url}/good",
            tmp_path / "data.zip",
            SourceFile("data.zip", size=len(good), md5=hashlib.md5(good).hexdigest()),
        )
        assert server.requests[0][1] is not None  # it asked for the rest, got the whole file
    assert (tmp_path / "data.zip").read_bytes() == good and not part.exists()


def test_a_later_layout_is_used_when_the_first_has_no_live_source(tmp_path):
    served = tmp_path / "served"
    fixtures.write("cars", served, n_classes=4, per_class=2, layout="devkit")
    with Server(served) as server:
        spec = datasets.get("cars")
        dead = Layout(
            "original",
            tuple(SourceFile(f.filename, (f"{server.url}/missing/{f.filename}",)) for f in spec.layouts[0].files),
        )
        live = Layout(
            "devkit",
            tuple(
                SourceFile(f.filename, (f"{server.url}/{f.filename}",), md5=md5(served / f.filename))
                for f in spec.layouts[1].files
            ),
        )
        files = acquire.obtain(replace(spec, layouts=(dead, live)), tmp_path / "downloads", True, backoff=0.01)
    assert [f.name for f in files] == [f.filename for f in spec.layouts[1].files]


def tar_with(tmp_path, members) -> Path:
    """A .tar of (name, kind, target) members: kind 'file', 'symlink' or 'hardlink'."""
    import io
    import tarfile

    path = tmp_path / "crafted.tar"
    with tarfile.open(path, "w") as archive:
        for name, kind, target in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = b"payload"
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            else:
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = target
                archive.addfile(info)
    return path


def test_a_long_symlink_chain_tar_is_refused_before_anything_is_written(tmp_path):
    """The shape of CVE-2025-4517's archives: a chain of nested symlinks, then a file written
    through it. Refused by our own check whatever tarfile's filter would do, the member named."""
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("mine")
    chain = [("l0", "symlink", ".")] + [(f"l{i}", "symlink", f"l{i - 1}") for i in range(1, 16)]
    members = chain + [("escape", "symlink", "l15/../outside"), ("escape/victim.txt", "file", None)]
    crafted = tar_with(tmp_path, members)
    with pytest.raises(DatasetError, match=r"crafted\.tar: member 'l0' is a link; the archive is refused"):
        acquire.extract([crafted], tmp_path / "raw")
    assert victim.read_text() == "mine" and not (tmp_path / "raw").exists()


@pytest.mark.parametrize("name", ["../evil.txt", "/tmp/evil.txt", "a/../../evil.txt"])
def test_tar_members_outside_the_destination_are_refused(tmp_path, name):
    crafted = tar_with(tmp_path, [("ok.txt", "file", None), (name, "file", None)])
    with pytest.raises(DatasetError, match="would be written outside"):
        acquire.extract([crafted], tmp_path / "raw")
    assert not (tmp_path / "raw").exists()


def test_a_hard_link_member_is_refused(tmp_path):
    crafted = tar_with(tmp_path, [("ok.txt", "file", None), ("hard", "hardlink", "/etc/passwd")])
    with pytest.raises(DatasetError, match="member 'hard' is a link"):
        acquire.extract([crafted], tmp_path / "raw")


def test_a_file_without_published_digest_is_pinned_at_first_use(tmp_path):
    """No sha256 published: the first copy's digest is recorded, a changed copy is refused later."""
    good = b"the vehicleid archive " * 2000
    with Mirrors(good) as server:
        source = SourceFile("VehicleID_V1.0.zip", (f"{server.url}/good",))
        folder = tmp_path / "downloads"
        path = acquire.fetch(source, folder, [])
        pin = acquire.pin_path(path)
        assert pin.read_text().split()[0] == hashlib.sha256(good).hexdigest()
        acquire.verify(path, source)  # the same copy passes
        path.write_bytes(b"y" * len(good))  # swapped behind our back
        with pytest.raises(ChecksumError, match=r"differs from .* recorded in .*VehicleID_V1\.0\.zip\.sha256"):
            acquire.verify(path, source)
        assert path.exists()  # not ours to delete
