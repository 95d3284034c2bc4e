"""`dmlbench doctor`: each line on a machine with nothing, and with everything in place."""

import hashlib
from dataclasses import replace

from dmlbench import doctor
from dmlbench.config.plan import Plan
from dmlbench.data import datasets, fixtures
from dmlbench.data.datasets import Layout, SourceFile
from dmlbench.run_config import Model

from conftest import CONFIG_DIR, full_plan


def plan_for(tmp_path, **extra):
    config = {"preset": "full", "experiments": ["ms.t2"], "data": {"root": str(tmp_path / "data")}}
    config.update(extra)
    return Plan.load(CONFIG_DIR, config)


def lines(checks):
    return {(c.area, c.item): c for c in checks}


def no_network(url, timeout):
    return doctor.Probe(False, "no answer (Name or service not known)", no_answer=True)


def test_nothing_here_and_no_network(tmp_path, monkeypatch):
    from dmlbench.models import weights

    monkeypatch.setattr(weights, "cache_dir", lambda: tmp_path / "hub")
    plan = plan_for(tmp_path)
    checks = doctor.run(plan, probe=no_network, free_bytes=2 * 10**9)
    found = lines(checks)
    assert [c.area for c in checks].count("network") == 1  # said once
    cub = found[("dataset", "cub")]
    assert cub.status == doctor.ACTION and "sources not checked (no network)" in cub.detail
    assert "CUB_200_2011.tgz (https://data.caltech.edu/" in cub.detail
    cars = found[("dataset", "cars")]
    assert cars.status == doctor.ACTION and "cars_train.tgz + cars_test.tgz + car_devkit.tgz" in cars.detail
    bn = found[("weights", "bninception")]
    assert bn.status == doctor.ACTION and str(tmp_path / "hub" / "bn_inception-52deb4733.pth") in bn.detail
    disk = [c for c in checks if c.area == "disk"][0]
    assert disk.status == doctor.ACTION and "2.0 GB free" in disk.detail
    assert "needs about 12.9 GB (cars 7.7 GB, cub 4.9 GB, weights 0.3 GB" in disk.detail
    assert found[("machine", "CUDA devices")].status in (doctor.ACTION, doctor.OK)
    assert "need action" in doctor.table(checks)


def test_everything_in_place(tmp_path, monkeypatch):
    from dmlbench.models import weights

    monkeypatch.setattr(weights, "cache_dir", lambda: tmp_path / "hub")
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "bn_inception-52deb4733.pth").write_bytes(b"weights")
    for name in ("cub", "cars"):  # fixtures placed as the real files, with their sizes published
        folder = tmp_path / "data" / "downloads" / name
        fixtures.write(name, folder, n_classes=4, per_class=2)
        spec = datasets.get(name)
        files = tuple(
            SourceFile(
                f.filename,
                f.urls,
                size=(folder / f.filename).stat().st_size,
                md5=hashlib.md5((folder / f.filename).read_bytes()).hexdigest(),
            )
            for f in spec.layouts[0].files
        )
        monkeypatch.setitem(
            datasets.DATASETS._entries,
            name,
            replace(spec, layouts=(Layout(spec.layouts[0].name, files),) + spec.layouts[1:]),
        )

    def nothing_to_ask(url, timeout):
        raise AssertionError(f"{url} probed although everything is here")

    plan = plan_for(tmp_path, overrides={"device": "cpu"})
    checks = doctor.run(plan, probe=nothing_to_ask, free_bytes=10**12)
    found = lines(checks)
    for key in (("dataset", "cub"), ("dataset", "cars")):
        assert found[key].status == doctor.OK and "files are in" in found[key].detail
    assert found[("weights", "bninception")].status == doctor.OK
    assert "cached" in found[("weights", "bninception")].detail
    disk = [c for c in checks if c.area == "disk"][0]
    # to extract + stores (4.5 + 3.2, 2.6 + 2.3)
    assert disk.status == doctor.OK and "(cars 7.7 GB, cub 4.9 GB;" in disk.detail
    assert found[("machine", "CUDA devices")].status != doctor.ACTION  # this plan runs on CPU
    assert not [c for c in checks if c.status == doctor.ACTION]
    assert "Everything the plan needs is here." in doctor.table(checks)


def test_answering_sources_and_a_prepared_dataset(tmp_path, monkeypatch):
    from dmlbench.data.prepare import prepare
    from dmlbench.models import weights

    monkeypatch.setattr(weights, "cache_dir", lambda: tmp_path / "hub")
    plan = plan_for(tmp_path, overrides={"device": "cpu"})  # planned for the real CUB's classes
    fixture = tmp_path / "fx" / "fixture" / "cub" / "manifest.csv"
    prepare("cub", "fixture", tmp_path / "fx", fixture, fixture_size={"n_classes": 4, "per_class": 2})
    stats = fixtures.read_stats(fixture.parent / "archives")
    monkeypatch.setitem(datasets.DATASETS._entries, "cub", replace(datasets.get("cub"), expected=stats))
    prepare(
        "cub",
        "real",
        tmp_path / "data",
        tmp_path / "data" / "real" / "cub" / "manifest.csv",
        user_path=str(fixture.parent / "raw"),
    )
    devkit = {u for f in datasets.get("cars").layouts[1].files for u in f.urls}

    def answers(url, timeout):
        if url in devkit or "pytorch.org" in url or "lip6" in url:
            return doctor.Probe(True, "answers")
        return doctor.Probe(False, "HTTP 404")

    found = lines(doctor.run(plan, probe=answers, free_bytes=10**12))
    assert found[("dataset", "cub")].status == doctor.OK and "prepared:" in found[("dataset", "cub")].detail
    cars = found[("dataset", "cars")]
    assert cars.status == doctor.OK and cars.detail.startswith("downloadable (devkit")
    assert found[("weights", "bninception")].detail.startswith("downloadable on first use")


def test_no_answering_source_names_each(tmp_path, monkeypatch):
    from dmlbench.models import weights

    monkeypatch.setattr(weights, "cache_dir", lambda: tmp_path / "hub")
    found = lines(doctor.run(plan_for(tmp_path), probe=lambda u, t: doctor.Probe(False, "HTTP 404"), free_bytes=10**12))
    cars = found[("dataset", "cars")].detail
    assert "http://imagenet.stanford.edu/internal/car196/car_ims.tgz: HTTP 404" in cars
    assert "car_devkit.tgz: HTTP 404" in cars


def test_probe_tells_an_html_page_from_a_file():
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(206 if self.path == "/file" else 200)
            self.send_header("Content-Type", "application/zip" if self.path == "/file" else "text/html")
            self.send_header("Content-Length", "1")
            self.end_headers()
            self.wfile.write(b"x")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert doctor.probe_url(url + "/file").ok
        page = doctor.probe_url(url + "/page")
        assert not page.ok and "HTML page" in page.detail and not page.no_answer
        assert doctor.probe_url("http://127.0.0.1:9/x", timeout=1).no_answer
    finally:
        server.shutdown()
        server.server_close()


def test_doctor_command_exits_non_zero_when_something_blocks(tmp_path):
    import sys

    from conftest import python_env
    from processes import run

    result = run(
        [
            sys.executable,
            "-m",
            "dmlbench",
            "doctor",
            "--config-dir",
            str(CONFIG_DIR),
            "--config",
            f'{{"experiments": ["ms.t2"], "data": {{"root": "{tmp_path}"}}}}',
            "--timeout",
            "1",
        ],
        capture_output=True,
        text=True,
        env=python_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "dataset: cub" in result.stdout and "need action" in result.stdout


def test_data_paths_that_hold_no_dataset_need_action(tmp_path, monkeypatch):
    """A file, an unrelated folder, and a folder with a truncated archive are not the dataset;
    a folder with the extracted dataset is."""
    import tarfile

    small = tmp_path / "small"
    small.mkdir()
    (small / "CUB_200_2011.tgz").write_bytes(b"x" * 46_000)
    extracted = tmp_path / "extracted"
    archives = tmp_path / "archives"
    stats = fixtures.write("cub", archives, n_classes=4, per_class=2)
    with tarfile.open(archives / "CUB_200_2011.tgz") as archive:
        archive.extractall(extracted, filter="data")
    unrelated = tmp_path / "etc"
    unrelated.mkdir()
    (unrelated / "hostname").write_text("machine\n")
    expected = {
        str(unrelated / "hostname"): "is a file",
        str(unrelated): "holds neither the files of a layout",
        str(small): "46,000 bytes, published 1,150,585,339",
    }
    for path, message in expected.items():
        plan = plan_for(tmp_path, datasets=["cub"], data={"paths": {"cub": path}, "root": str(tmp_path / "data")})
        cub = lines(doctor.dataset_checks(plan, {}))[("dataset", "cub")]
        assert cub.status == doctor.ACTION and message in cub.detail, (path, cub.detail)
    plan = plan_for(tmp_path, datasets=["cub"], data={"paths": {"cub": str(extracted)}, "root": str(tmp_path / "data")})
    monkeypatch.setitem(
        datasets.DATASETS._entries, "cub", replace(datasets.get("cub"), expected=stats)
    )  # the fixture's split
    cub = lines(doctor.dataset_checks(plan, {}))[("dataset", "cub")]
    assert cub.status == doctor.OK and "the extracted dataset" in cub.detail


def test_the_results_disk_need_of_full_is_its_trainings_models_and_embeddings():
    """Against an independent count: every run of a paper's experiment keeps one model.pt (its
    parameters and buffers), every final fold training its test embeddings, each its records; a
    run that is an earlier run's training (a link to its folder) keeps nothing of its own."""
    import json

    import torch

    from dmlbench import models
    from dmlbench.data import datasets
    from dmlbench.preflight.disk import RECORDS_BYTES

    plan = full_plan()
    sizes = {}
    expected = 0
    for run in plan.trainings():
        cfg = plan.resolve(run)
        stage = (cfg.get("run") or {}).get("stage")
        if stage is None:
            key = json.dumps(cfg["model"], sort_keys=True)
            if key not in sizes:
                with torch.device("meta"):
                    net = models.build(Model(**dict(cfg["model"], pretrained=False)))
                sizes[key] = sum(p.numel() * 4 for p in net.parameters()) + sum(
                    b.numel() * b.element_size() for b in net.buffers()
                )
            expected += sizes[key]
        elif stage == "final":
            test = sum(n for split, n in datasets.get(run.dataset).expected.images.items() if split != "train")
            expected += test * (cfg["model"]["embedding_dim"] + 1) * 4
        expected += RECORDS_BYTES
    check = doctor.results_disk_check(plan, free_bytes=10**9)
    assert check.status == doctor.ACTION and check.item == "results/full"
    assert f"need about {expected / 1e9:.1f} GB" in check.detail and "1.0 GB free" in check.detail
    assert doctor.results_disk_check(plan, free_bytes=10**15).status == doctor.OK
