"""The suite's numbers in a paper's table (`table.csv` of an experiment): each cell's mean ± 95 %
interval and n, and ours − paper with its verdict."""

from __future__ import annotations

import pandas as pd

from dmlbench.report.html_templates import Cell
from dmlbench.report.verdict_marks import verdict_class
from dmlbench.verdicts import numbers

NOT_RUN = "not run"


class Cells:
    """The suite's numbers of one experiment (`table.csv`), by (dataset, method, metric)."""

    def __init__(self, summary: pd.DataFrame | None):
        self.values = {}
        if summary is not None:
            for r in summary.itertuples():
                verdict = getattr(r, "verdict", None)
                self.values[(r.dataset, r.method, r.metric)] = (
                    r.mean,
                    getattr(r, "half", float("nan")),
                    r.n,
                    getattr(r, "difference", None),
                    verdict if isinstance(verdict, str) else None,
                )
        self.ran = {(d, m) for d, m, _ in self.values}
        self.references = reference_labels(summary)

    def ours(self, dataset: str, method: str, metric: str) -> Cell:
        if (dataset, method) not in self.ran:
            if method in self.references:  # another backbone or size on this dataset
                return Cell("–", cls="muted")
            return Cell(NOT_RUN, cls="muted")
        found = self.values.get((dataset, method, metric))
        if found is None:
            return Cell("·", cls="muted", title="not measured by this preset")
        mean, half, n = found[:3]
        spread = "" if pd.isna(half) else f" ± {half:.2f}"
        return Cell(f"{mean:.2f}{spread}", cls="ours", n=int(n))

    def verdict(self, dataset: str, method: str, metric: str) -> str | None:
        """The verdict on the paper's number of this cell (not run where the row did not run)."""
        found = self.values.get((dataset, method, metric))
        if found is None or found[4] is None:
            return numbers.NOT_RUN if (dataset, method) not in self.ran else None
        return found[4]

    def delta(self, dataset: str, method: str, metric: str) -> Cell:
        """Ours − paper with the verdict's symbol, coloured by the verdict (the paper gives a number)."""
        found = self.values.get((dataset, method, metric))
        if found is None or found[4] is None:
            verdict = numbers.NOT_RUN if (dataset, method) not in self.ran else None
            if verdict is None:
                return Cell("·", cls="delta muted")
            return Cell(numbers.SYMBOLS[verdict], cls=f"delta {verdict_class(verdict)}", title=verdict)
        difference, verdict = found[3], found[4]
        return Cell(
            f"{difference:+.2f} {numbers.SYMBOLS[verdict]}",
            cls=f"delta {verdict_class(verdict)}",
            title=f"{verdict}: {numbers.MEANINGS[verdict]}",
        )


def reference_labels(summary: pd.DataFrame | None) -> list[str]:
    """The labels of the table's reference rows (no training), in their order."""
    if summary is None or "reference" not in summary:
        return []
    return list(dict.fromkeys(summary.loc[summary["reference"].fillna(False).astype(bool), "method"]))
