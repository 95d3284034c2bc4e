"""Forward + backward time of each loss that pytorch-metric-learning also implements, on the same
inputs, suite vs pytorch-metric-learning, with the ratio. A benchmark: it prints figures and
asserts nothing about speed.

    python -m benchmarks.losses [--batches 80 640] [--dims 512] [--repeats 15] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from dmlbench.methods import losses, miners

PER_CLASS = 5


def suite_cases(num_classes: int, dim: int):
    """Suite methods by name: (loss, miner)."""
    return {
        "contrastive": (losses.build("contrastive", neg_margin=0.5), None),
        "triplet+semihard": (losses.build("triplet", margin=0.1), miners.build("semihard", margin=0.1)),
        "multi_similarity+miner": (losses.build("multi_similarity"), miners.build("multi_similarity")),
        "lifted (generalised)": (losses.build("lifted", margin=1.0), None),
        "lifted_structure": (losses.build("lifted_structure", margin=1.0), None),
        "npair": (losses.build("npair"), None),
        "angular": (losses.build("angular"), None),
        "margin+distance_weighted": (
            losses.build("margin", num_classes=num_classes),
            miners.build("distance_weighted"),
        ),
        # pytorch-metric-learning's SoftTriple has no centre regulariser (τ R), so τ = 0 here
        "softtriple": (losses.build("softtriple", num_classes=num_classes, embedding_dim=dim, tau=0.0), None),
        "proxy_nca": (losses.build("proxy_nca", num_classes=num_classes, embedding_dim=dim), None),
        # pytorch-metric-learning bins as the authors' code (L + 1 centres): bins="code" here
        "fastap (closed-form backward)": (losses.build("fastap", bins="code", gradient="closed_form"), None),
        "fastap (autograd backward)": (losses.build("fastap", bins="code", gradient="autograd"), None),
    }


def pml_cases(num_classes: int, dim: int):
    """The same methods in pytorch-metric-learning (closest configuration)."""
    from pytorch_metric_learning import distances
    from pytorch_metric_learning import losses as L
    from pytorch_metric_learning import miners as M

    cos = distances.CosineSimilarity()
    return {
        "contrastive": (L.ContrastiveLoss(pos_margin=1, neg_margin=0.5, distance=cos), None),
        "triplet+semihard": (
            L.TripletMarginLoss(margin=0.1, distance=cos),
            M.TripletMarginMiner(margin=0.1, type_of_triplets="semihard", distance=cos),
        ),
        "multi_similarity+miner": (
            L.MultiSimilarityLoss(alpha=2, beta=50, base=0.5),
            M.MultiSimilarityMiner(epsilon=0.1),
        ),
        "lifted (generalised)": (L.GeneralizedLiftedStructureLoss(neg_margin=1, pos_margin=0), None),
        "lifted_structure": (L.LiftedStructureLoss(neg_margin=1, pos_margin=0), None),
        "npair": (L.NPairsLoss(), None),
        "angular": (L.AngularLoss(alpha=40), None),
        "margin+distance_weighted": (
            L.MarginLoss(margin=0.2, beta=1.2, learn_beta=True, num_classes=num_classes),
            M.DistanceWeightedMiner(cutoff=0.5, nonzero_loss_cutoff=1.4),
        ),
        "softtriple": (L.SoftTripleLoss(num_classes, dim), None),
        "proxy_nca": (L.ProxyNCALoss(num_classes, dim), None),
        "fastap (closed-form backward)": (L.FastAPLoss(num_bins=10), None),
        "fastap (autograd backward)": (L.FastAPLoss(num_bins=10), None),
    }


def time_one(step, repeats: int, budget: float = 20.0) -> list[float]:
    """Times of `repeats` calls after a warm-up; fewer (at least 2) when one call is so slow that
    they would exceed `budget` seconds."""
    start = time.perf_counter()
    step()  # warm-up
    first = time.perf_counter() - start
    times = []
    for _ in range(min(repeats, max(2, int(budget / max(first, 1e-9))))):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def measure(batch: int, dim: int, repeats: int) -> list[dict]:
    """Suite and pytorch-metric-learning timings of every shared loss at one size."""
    num_classes = batch // PER_CLASS
    labels = torch.arange(num_classes).repeat_interleave(PER_CLASS)
    # unit vectors, as the suite's networks output (raw Gaussian vectors make N-pair's logits so
    # large that its gradients underflow to denormals, which are slow on CPUs)
    base = torch.nn.functional.normalize(torch.randn(batch, dim), dim=1)
    rows = []
    suite, pml = suite_cases(num_classes, dim), pml_cases(num_classes, dim)
    for name in suite:
        result = {"loss": name, "batch": batch, "dim": dim}
        for side, (loss, miner) in (("suite", suite[name]), ("pml", pml[name])):

            def step(loss=loss, miner=miner, side=side):
                x = base.clone().requires_grad_(True)
                if side == "suite":
                    value = loss(x, labels, miner=miner)
                else:
                    value = loss(x, labels, miner(x, labels)) if miner else loss(x, labels)
                value.backward()

            torch.manual_seed(0)
            times = time_one(step, repeats)
            result[f"{side}_ms"] = 1000 * statistics.median(times)
            result[f"{side}_spread_ms"] = 1000 * (max(times) - min(times))
        result["ratio"] = result["suite_ms"] / result["pml_ms"]
        rows.append(result)
        print(
            f"{name:26s} B={batch:4d} d={dim:4d}  suite {result['suite_ms']:8.2f} ms  "
            f"pml {result['pml_ms']:8.2f} ms  ratio {result['ratio']:.2f}",
            flush=True,
        )
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        f"# Loss forward + backward time (CPU, {torch.get_num_threads()} threads, median)",
        "",
        "| loss | batch | d | suite (ms) | pytorch-metric-learning (ms) | suite / pml |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['loss']} | {r['batch']} | {r['dim']} | {r['suite_ms']:.2f} | {r['pml_ms']:.2f} | {r['ratio']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, nargs="+", default=[80, 640])
    parser.add_argument("--dims", type=int, nargs="+", default=[512])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", default="reports/benchmarks")
    args = parser.parse_args(argv)
    rows = [r for b in args.batches for d in args.dims for r in measure(b, d, args.repeats)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "losses.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / "losses.md").write_text(markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
