"""The real download code against fixture archives served on 127.0.0.1."""

import hashlib
import http.server
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from dmlbench.data import acquire, datasets, fixtures
from dmlbench.data.datasets import SourceFile
from dmlbench.data.prepare import prepare
from dmlbench.errors import ChecksumError, DatasetError


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


def served_cub(monkeypatch, server, archive_folder, stats, checksum):
    spec = datasets.get("cub")
    source = SourceFile("CUB_200_2011.tgz", f"{server.url}/CUB_200_2011.tgz", checksum)
    monkeypatch.setitem(datasets.DATASETS, "cub", replace(spec, files=(source,), expected=stats))


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
        with pytest.raises(ChecksumError, match=r"CUB_200_2011\.tgz: md5 .* differs from the published 0{32}"):
            prepare("cub", "real", tmp_path / "data", out)
    assert not out.exists()
    assert not list((tmp_path / "data" / "downloads" / "cub").iterdir())
    assert not (out.parent / "raw").exists()


def test_interrupted_download_resumes_with_range(cub_archive, tmp_path):
    folder, _ = cub_archive
    archive = folder / "CUB_200_2011.tgz"
    with Server(folder, cut_first_after=1000) as server:
        dest = tmp_path / "CUB_200_2011.tgz"
        acquire.download(f"{server.url}/CUB_200_2011.tgz", dest, md5(archive), backoff=0.01)
    assert dest.read_bytes() == archive.read_bytes()
    assert server.requests[0] is None and server.requests[1] == "bytes=1000-"


def test_unreachable_server_says_what_to_do(tmp_path):
    with pytest.raises(DatasetError, match="download it by hand to"):
        acquire.download("http://127.0.0.1:9/none.tgz", tmp_path / "none.tgz", None, retries=2,
                         backoff=0.01)


def test_corrupt_archive_is_removed_and_reported(tmp_path):
    bad = tmp_path / "CUB_200_2011.tgz"
    bad.write_bytes(b"this is not a tar archive" * 100)
    with pytest.raises(DatasetError, match="not a readable archive.*removed"):
        acquire.extract([bad], tmp_path / "raw")
    assert not bad.exists() and not (tmp_path / "raw").exists()


def test_missing_dataset_without_download(tmp_path):
    out = tmp_path / "real" / "cars" / "manifest.csv"
    with pytest.raises(DatasetError, match=r"car_ims\.tgz is missing and downloads are off"):
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
    with pytest.raises(ChecksumError, match="This is your file .*left untouched"):
        prepare("cub", "real", tmp_path / "data", out, user_path=str(folder))
    assert mine.read_bytes() == before and not out.exists()


def test_corrupt_archive_of_the_user_is_reported_not_removed(tmp_path):
    bad = tmp_path / "CUB_200_2011.tgz"
    bad.write_bytes(b"this is not a tar archive" * 100)
    with pytest.raises(DatasetError, match="not a readable archive.*your file .*left untouched"):
        acquire.extract([bad], tmp_path / "raw", owned=False)
    assert bad.exists() and not (tmp_path / "raw").exists()
