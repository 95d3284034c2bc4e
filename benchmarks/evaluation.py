"""Evaluation at the real sizes: the suite vs pytorch-metric-learning's AccuracyCalculator and
scikit-learn's exact NearestNeighbors, with the matrix-product lower bound (roofline).

Each contender runs in its own subprocess so that its peak resident memory (VmHWM, minus the
memory held before it started) is its own; the timed contenders run `repeats` times in turn and
keep their fastest run (this machine's timings vary from run to run). Embeddings have class
structure: class centres plus Gaussian noise, L2-normalised.

    python -m benchmarks.evaluation [--size sop|inshop|tiny] [--contenders roofline,suite_knn_only]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dmlbench.core.environment import peak_resident_mib

SIZES = {  # (gallery items, gallery classes, queries or None for self-retrieval, ks)
    "sop": (60502, 11316, None, (1, 10, 100, 1000)),
    "inshop": (12612, 3985, 14218, (1, 10, 20, 30, 40, 50)),
    "tiny": (3000, 300, None, (1, 10, 100)),
}
DIM = 512
NOISE = 2.2  # within-class spread: SOP at about the Recall@1 and MAP@R of a good model


def embeddings(size: str, seed: int = 0):
    n, classes, n_queries, _ = SIZES[size]
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(classes, DIM)).astype(np.float32)

    def draw(count):
        labels = np.concatenate([np.arange(classes), rng.integers(0, classes, count - classes)])
        x = centres[labels] + NOISE * rng.normal(size=(count, DIM)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True), labels

    gallery, g_labels = draw(n)
    queries, q_labels = draw(n_queries) if n_queries else (None, None)
    return gallery, g_labels, queries, q_labels


def _contender(name: str, ks):
    """The callable that computes `name`'s result from (gallery, g_labels, queries, q_labels);
    its imports happen here, outside the timed part."""
    if name in ("suite", "suite_knn_only"):
        import sklearn.metrics  # noqa: F401  (imported on first use by the suite's clustering metrics)

        from dmlbench.evaluation.metrics import retrieval_metrics

        return lambda g, gl, q, ql: retrieval_metrics(g, gl, ks, q, ql, clustering=name == "suite")
    if name == "pml":
        from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

        calc = AccuracyCalculator(
            include=("precision_at_1", "r_precision", "mean_average_precision_at_r", "NMI"),
            k="max_bin_count",
            device=None,
        )

        def pml(g, gl, q, ql):
            raw = calc.get_accuracy(g, gl) if q is None else calc.get_accuracy(q, ql, g, gl)
            return {
                "recall@1": raw["precision_at_1"],
                "r_precision": raw["r_precision"],
                "map@r": raw["mean_average_precision_at_r"],
                "nmi": raw["NMI"],
            }

        return pml
    if name == "sklearn_knn":
        from sklearn.neighbors import NearestNeighbors

        def sklearn_knn(g, gl, q, ql):
            k = min(max(ks) + (q is None), len(g))
            nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric="euclidean").fit(g)
            return {"neighbours": int(nn.kneighbors(g if q is None else q, return_distance=False).shape[1])}

        return sklearn_knn
    if name == "roofline":
        import torch

        def roofline(g, gl, q, ql):  # the suite's chunk, into one reused output
            from dmlbench.evaluation.ranking import CHUNK

            gallery = torch.from_numpy(g)
            queries = torch.from_numpy(g if q is None else q)
            out = torch.empty((min(CHUNK, len(queries)), len(gallery)))
            for chunk in torch.split(queries, CHUNK):
                torch.matmul(chunk, gallery.T, out=out[: len(chunk)])
            return {}

        return roofline
    raise ValueError(name)


def worker(contender: str, size: str, data: Path) -> dict:
    # loading saved arrays adds no transient copies, so the memory high-water mark before the
    # timed part is the data itself and what the contender allocates shows above it
    gallery, g_labels = np.load(data / "gallery.npy"), np.load(data / "g_labels.npy")
    queries = np.load(data / "queries.npy") if (data / "queries.npy").exists() else None
    q_labels = np.load(data / "q_labels.npy") if queries is not None else None
    compute = _contender(contender, SIZES[size][3])
    before = peak_resident_mib()
    start = time.perf_counter()
    metrics = compute(gallery, g_labels, queries, q_labels)
    seconds = time.perf_counter() - start
    return {
        "contender": contender,
        "size": size,
        "seconds": seconds,
        "peak_extra_mib": max(peak_resident_mib() - before, 0.0),
        "metrics": metrics,
    }


CONTENDERS = ["roofline", "suite_knn_only", "suite", "pml"]  # timed `repeats` times
ONCE = ["sklearn_knn"]  # slow references: one run


def run(size: str, contenders=tuple(CONTENDERS), repeats: int = 3, once=tuple(ONCE)) -> list[dict]:
    """One row per contender: its fastest of `repeats` runs (taken in turn) and its largest peak;
    the `once` contenders (slow references) run a single time."""
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        arrays = dict(zip(("gallery", "g_labels", "queries", "q_labels"), embeddings(size)))
        for name, array in arrays.items():
            if array is not None:
                np.save(data / f"{name}.npy", array)
        del arrays
        for contender in [c for _ in range(repeats) for c in contenders] + list(once):
            runs.setdefault(contender, []).append(_run_worker(contender, size, data))
    rows = [_fastest(rows) for rows in runs.values()]
    timed = {row["contender"]: row["seconds"] for row in rows if "seconds" in row}
    if {"roofline", "suite_knn_only"} <= set(timed):
        print(
            f"evaluation {size:6s} without clustering / bare matrix products: "
            f"{timed['suite_knn_only'] / timed['roofline']:.2f}x (fastest runs)",
            flush=True,
        )
    return rows


def _fastest(rows: list[dict]) -> dict:
    timed = [r for r in rows if "seconds" in r]
    if not timed:
        return rows[0]
    best = dict(min(timed, key=lambda r: r["seconds"]))
    best.update(
        runs=len(timed),
        all_seconds=[r["seconds"] for r in timed],
        peak_extra_mib=max(r["peak_extra_mib"] for r in timed),
    )
    return best


def _run_worker(contender: str, size: str, data: Path) -> dict:
    """One contender in its own process, so that its peak memory is its own."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.evaluation", "--worker", contender, "--size", size, "--data", str(data)],
        capture_output=True,
        text=True,
    )
    if out.returncode:
        row = {"contender": contender, "size": size, "error": out.stderr.strip()[-500:]}
    else:
        row = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"evaluation {size:6s} {contender:15s} "
        + (
            f"{row['seconds']:8.1f} s  peak +{row['peak_extra_mib']:.0f} MiB"
            if "seconds" in row
            else f"failed: {row['error'][:200]}"
        ),
        flush=True,
    )
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", choices=list(SIZES), default="sop")
    parser.add_argument("--contenders", help="comma-separated, of " + ", ".join(CONTENDERS + ONCE) + " (default: all)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.size, Path(args.data)), default=float))
    elif args.contenders:
        chosen = args.contenders.split(",")
        unknown = sorted(set(chosen) - set(CONTENDERS + ONCE))
        if unknown:
            parser.error(f"--contenders: unknown {', '.join(unknown)}; choose from " + ", ".join(CONTENDERS + ONCE))
        run(args.size, [c for c in CONTENDERS if c in chosen], once=[c for c in ONCE if c in chosen])
    else:
        run(args.size)


if __name__ == "__main__":
    main()
