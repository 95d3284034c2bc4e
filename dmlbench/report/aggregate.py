"""One experiment's runs → `runs.csv`, `table.csv`, `table.md` and figures.

Numbers are percentages, as the papers print them: mean ± 95 % interval over seeds (Student t, n
given; the std too in table.csv), the paper's number beside it where the paper reports one, the
difference (ours − paper) and its verdict (`dmlbench.verdicts.numbers`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from dmlbench.config.loading import printed
from dmlbench.core.errors import DmlbenchError
from dmlbench.fair.intervals import mean_interval
from dmlbench.core.io import atomic_path, set_aside
from dmlbench.models import timm_trunks
from dmlbench.plots import FIGURES
from dmlbench.report import figures, references, run_status
from dmlbench.report.markdown import row as markdown_row
from dmlbench.verdicts import numbers
from dmlbench.verdicts.numbers import SELECTED

TRUNK_FEATURE = " (trunk feature)"  # a metric of the trunk's pooled feature, the head removed (`eval.trunk_feature`)

SELECTED_NOTE = (
    "Columns marked (test-selected) take each run's epoch with the best test Recall@1, "
    "as the paper reports (a choice made on the test set): the verdict compares the paper's "
    "number with them; the last-epoch column of the same metric is the honest number."
)
TOY_NOTE = (
    "Fixture data (synthetic images in the datasets' formats, small networks): these numbers test "
    "the pipeline and are not comparable with the paper's; the differences and verdicts shown "
    "test the code that computes them, not the paper."
)


def toy_note(own: list[str] = ()) -> str:
    """TOY_NOTE, and which datasets are the user's own images (a CSV: real images, reduced sizes)."""
    if not own:
        return TOY_NOTE
    return (
        f"{TOY_NOTE} {', '.join(own)}: your own images (data.csv), trained at this preset's reduced sizes: "
        f"its numbers test your data through the pipeline."
    )


def collect(metric_files: list[Path], planned: dict[str, str | list[str]] | None = None) -> pd.DataFrame:
    """One row per run: its keys, every metric, in %, and the fingerprint of the settings it was
    trained with (empty for numbers made by hand). `planned`: the start of the fingerprint
    of the plan's settings per run (`dataset/method/seedN`, its folder's last three parts); a
    metrics file computed with other settings is refused."""
    check_fresh(metric_files, planned or {})
    rows = []
    for path in metric_files:
        try:
            data = json.loads(Path(path).read_text())
            row = {k: data["run"][k] for k in ("experiment", "dataset", "method", "seed")}
            row.update({k: 100.0 * float(v) for k, v in data["metrics"].items()})
            selected = data.get("test_selected") or {}
            row.update({k + SELECTED: 100.0 * float(v) for k, v in selected.items() if k != "epoch"})
            row.update({k + TRUNK_FEATURE: 100.0 * float(v) for k, v in (data.get("trunk_feature") or {}).items()})
            if selected:
                row["test-selected epoch"] = selected["epoch"]
            _check_metrics_file(Path(path), row)
            row.update(_linked_keys(Path(path)))
            row["fingerprint"] = run_status.metrics_fingerprint(Path(path).parent, data)  # the verdict checks it
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
            moved = set_aside(Path(path))
            raise DmlbenchError(
                f"{path} is not a metrics file of the suite ({type(error).__name__}: "
                f"{error}); set aside as {moved.name}. Rerun: the train job writes it "
                f"again from the run's model (no training when the model is this run's)"
            ) from None
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["dataset", "method", "seed"]).reset_index(drop=True)


def _linked_keys(path: Path) -> dict:
    """A run folder linked to the earlier run it is (`run_dedup`): its own keys, the row's."""
    folder = path.parent
    if not folder.is_symlink() or not re.fullmatch(r"seed\d+", folder.name):
        return {}
    return {**dict(zip(("experiment", "dataset", "method"), folder.parts[-4:-1])), "seed": int(folder.name[4:])}


def _check_metrics_file(path: Path, row: dict) -> None:
    """A metrics file names the run of its folder (…/<experiment>/<dataset>/<method>/seed<N>/, the
    one a linked folder points to) and holds metrics in [0, 1] (in % here: [0, 100]); a NaN is a
    failed run, judged as such. Else ValueError, which sets the file aside with its message."""
    folder = path.parent.resolve().parts[-4:]
    said = (row["experiment"], row["dataset"], row["method"], f"seed{row['seed']}")
    if len(folder) == 4 and re.fullmatch(r"seed\d+", folder[-1]) and tuple(folder) != said:  # a run folder
        raise ValueError(f"it names the run {'/'.join(map(str, said))}, not its folder's {'/'.join(folder)}")
    bad = {
        k: v
        for k, v in row.items()
        if k not in RUN_KEYS
        and k != "test-selected epoch"
        and isinstance(v, float)
        and v == v
        and not 0.0 <= v <= 100.0
    }
    if bad:
        raise ValueError(f"metrics outside [0, 1]: {', '.join(f'{k} {v / 100!r}' for k, v in bad.items())}")


RUN_KEYS = ("experiment", "dataset", "method", "seed")


def check_fresh(metric_files: list[Path], planned: dict[str, str | list[str]]) -> None:
    """Refuse metrics computed with other settings than the plan's (a run not trained again after
    a change, which `--rerun-triggers mtime` allows): whatever the rerun triggers, no table shows
    them. A run may have several accepted fingerprints (`RunSettings.accepted_fingerprints`)."""
    stale = []
    for path in metric_files:
        expected = planned.get("/".join(Path(path).parent.parts[-3:]))
        if expected is None:
            continue
        try:
            result = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue  # read (and refused) with its own message below
        if not (isinstance(result, dict) and isinstance(result.get("metrics"), dict)):
            continue  # not a metrics file at all: refused as damaged below, not as stale
        found = run_status.metrics_fingerprint(Path(path).parent, result)
        accepted = (expected,) if isinstance(expected, str) else tuple(expected)
        if found is not None and not found.startswith(accepted):  # None: made by hand, nothing to compare
            stale.append(str(path))
    if stale:
        raise DmlbenchError(
            f"{len(stale)} metrics file(s) were computed with other settings than the plan's: "
            f"{', '.join(stale[:3])}{' …' if len(stale) > 3 else ''}. Train them again: "
            f"`snakemake --forcerun train --until <these files>` (or rerun without `--rerun-triggers mtime`)"
        )


def summarise(runs: pd.DataFrame, metrics: list[str], reported: dict, margin=None, selected=()) -> pd.DataFrame:
    """Mean, std, n and the 95 % interval's half-width per dataset × method × metric, with the
    paper's number, the difference and the verdict (`margin`: the experiment's, `dmlbench.config.margins.of`). A metric
    the paper reports at its test-selected epoch (`selected`) is judged on that column; its
    last-epoch column, the honest number, is shown with its difference and no verdict."""
    rows = []
    for (dataset, method), group in runs.groupby(["dataset", "method"], sort=True):
        for metric in metrics:
            if metric not in group:
                continue
            values = group[metric]
            if values.isna().all():  # a metric of other datasets (VehicleID's small_recall@1, …)
                continue
            failed = values.isna()  # a NaN of this dataset's metric: a failed seed, judged as such
            values = values.dropna()
            base = metric.removesuffix(SELECTED)
            text = reported.get(method, {}).get(dataset, {}).get(base)
            paper = None if text is None else float(text)  # the spec sends the paper's digits as text
            mean = float(values.mean())
            verdict = None
            if paper is not None and (base not in selected or metric != base):
                band = numbers.band_of(margin, base) + numbers.printed_precision(str(text))
                verdict = numbers.judge(values.tolist() + [float("nan")] * int(failed.sum()), paper, band).verdict
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "metric": metric,
                    "mean": mean,
                    "std": float(values.std(ddof=1)) if len(values) > 1 else float("nan"),
                    "half": mean_interval(values)[1] if len(values) > 1 else float("nan"),
                    "n": int(len(values)),
                    "paper": paper,
                    "difference": None if paper is None else mean - paper,
                    "verdict": verdict,
                }
            )
    return pd.DataFrame(rows)


def quoted_rows(spec: dict) -> pd.DataFrame:
    """Numbers the paper only quotes from the literature: shown as quoted, never as run."""
    rows = [
        {"dataset": dataset, "method": method, "metric": metric, "value": value}
        for method, per_dataset in (spec.get("quoted") or {}).items()
        for dataset, metrics in per_dataset.items()
        for metric, value in metrics.items()
    ]
    return pd.DataFrame(rows, columns=["dataset", "method", "metric", "value"])


def markdown(summary: pd.DataFrame, spec: dict, quoted: pd.DataFrame) -> str:
    """One Markdown table per dataset: rows = methods, columns = metrics, as the paper prints them."""
    labels = spec["method_labels"]
    lines = [f"# {spec['experiment']}: {spec['title']}", ""]
    if spec.get("toy_data"):
        lines += [toy_note(spec.get("own_data", [])), ""]
    if spec.get("paper"):
        lines += [
            f"Paper: `{spec['paper']}`. Cells: this suite (mean ± 95 % interval over n seeds) / paper "
            f"(as it prints it) / difference / verdict, in %. Last-epoch model. Rows: the paper's names "
            f"where its table gives them.",
            "",
        ]
    else:
        lines += [
            "The suite's own experiment (no paper numbers). Cells: mean ± 95 % interval over n seeds, "
            "in %. Last-epoch model.",
            "",
        ]
    if spec["table"].get("test_selected"):
        lines += [SELECTED_NOTE, ""]
    said = references.sentences(summary, spec.get("reference_of") or [], labels)
    if said:
        lines += [
            'Rows "no training": the same evaluation of embeddings before any training step. ' + " ".join(said),
            "",
        ]
    leakage = timm_trunks.overlap_note(t["backbone"] for t in (spec.get("trunks") or {}).values())
    if leakage:
        lines += [leakage, ""]
    for dataset, block in summary.groupby("dataset", sort=False):
        metrics = list(dict.fromkeys(block["metric"]))
        lines += [f"## {dataset}", "", markdown_row(["method", *metrics]), "|---|" + "---|" * len(metrics)]
        for method, rows in block.groupby("method", sort=False):
            paper_texts = (spec.get("reported") or {}).get(method, {}).get(dataset, {})
            cells = {r.metric: _cell(r, paper_texts.get(r.metric)) for r in rows.itertuples()}
            lines.append(markdown_row([labels.get(method, method), *(cells.get(m, "") for m in metrics)]))
        for method, rows in quoted[quoted["dataset"] == dataset].groupby("method", sort=False):
            cells = {r.metric: printed(r.value) for r in rows.itertuples()}
            lines.append(
                markdown_row([f"{method} (quoted by the paper, not run)", *(cells.get(m, "") for m in metrics)])
            )
        lines.append("")
    return "\n".join(lines)


def _cell(row, paper_text) -> str:
    """Ours (mean ± 95 % interval, n) / the paper's number as it prints it / the difference / the
    verdict (symbol and word)."""
    text = f"{row.mean:.2f}" + ("" if pd.isna(row.half) else f" ± {row.half:.2f}") + f" (n={row.n})"
    if row.paper is not None and not pd.isna(row.paper):
        text += f" / {printed(paper_text if paper_text is not None else row.paper)} / {row.difference:+.2f}"
        if isinstance(row.verdict, str):
            text += f" / {numbers.SYMBOLS[row.verdict]} {row.verdict}"
    return text


def _metrics(spec: dict, runs: pd.DataFrame) -> list[str]:
    """The table's metrics (every recall of the runs where the catalogue names none)."""
    metrics = spec["table"].get("metrics") or [c for c in runs.columns if "@" in c]
    return metrics + [m + SELECTED for m in spec["table"].get("test_selected") or []]


def aggregate(spec: dict, metric_files: list[Path], output_dir: Path, reference_files: list[Path] = ()) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    try:
        runs = collect(metric_files, spec.get("fingerprints"))
        refs = references.read(list(reference_files), _metrics(spec, runs))
    except DmlbenchError:
        # the preset's page shows numbers of a file now known to be damaged: without it, the rerun
        # makes the page again, and with it this table and the metrics file (Snakemake does not
        # remake a missing intermediate file while the final page is present)
        (output_dir.parent / "index.html").unlink(missing_ok=True)
        (output_dir / "quoted.csv").unlink(missing_ok=True)  # not an output Snakemake removes: no stray file
        raise
    metrics = _metrics(spec, runs)
    summary = summarise(
        runs, metrics, spec.get("reported") or {}, spec.get("margin"), spec["table"].get("test_selected") or ()
    ).assign(reference=False)
    refs = refs[refs["dataset"].isin(summary["dataset"])] if len(refs) else refs
    summary = pd.concat([refs, summary], ignore_index=True) if len(refs) else summary
    order = {dataset: i for i, dataset in enumerate(spec.get("datasets") or [])}
    summary = summary.sort_values("dataset", key=lambda col: col.map(order), kind="stable")
    quoted = quoted_rows(spec)
    quoted = quoted[quoted["metric"].isin(metrics) & quoted["dataset"].isin(summary["dataset"])]
    before = set(output_dir.iterdir())
    try:
        _write(spec, metric_files, output_dir, runs, summary, quoted)
    except BaseException:  # no partial output: what this step wrote goes with its failure
        for path in set(output_dir.iterdir()) - before:
            path.unlink(missing_ok=True)
        for name in ("runs.csv", "table.csv", "table.md", "quoted.csv"):
            (output_dir / name).unlink(missing_ok=True)
        raise


def _write(spec, metric_files, output_dir, runs, summary, quoted) -> None:
    for name, frame in (("runs.csv", runs), ("table.csv", summary), ("quoted.csv", quoted)):
        with atomic_path(output_dir / name) as tmp:
            frame.to_csv(tmp, index=False)
    with atomic_path(output_dir / "table.md") as tmp:
        tmp.write_text(markdown(summary, spec, quoted))
    figures.recall_curves(summary, spec, output_dir / "recall_at_k.png")
    if spec.get("plot"):
        figures.sweep_plot(summary[~summary["reference"].astype(bool)], spec, output_dir / "sweep.png")
    run_dirs = [Path(p).parent for p in metric_files]
    figures.learning_curves(run_dirs, spec, output_dir / "learning_curves.png")
    for name in spec.get("figures") or []:
        FIGURES.get(name)(run_dirs, spec, output_dir)
