"""What a claim's sentence says, tested as it says it (docs/verdicts.md, "Claims"). `kind:`

- `gain` (the default): `better` beats `worse`. A list of datasets or metrics (or, in a swept
  experiment, of `variants`, the settings of the sweep) is one statement over them all: an
  intersection-union test, significant only where every part is (p = the largest part's p), its
  gain the smallest part's.
  `worse` may be a row the paper only quotes from the literature (a competitor the suite does not
  run), or `best quoted`: on each part the highest of the table's quoted numbers (a "beats the
  state of the art" sentence). The quoted number is a constant: the test is one-sample, our
  seeds against it (scipy's `ttest_rel` against that constant, so failed seeds drop as in a pair).
- `equivalent` ("≈", "recovers", "comparable"): two one-sided tests of better − worse inside ±δ
  (p = the larger one-sided p); *differs* where the 95 % interval lies wholly outside ±δ.
- `no_gain` ("gives no gain over"): non-superiority, better − worse < δ shown by a one-sided
  test; *reversed* where the 95 % interval lies wholly above δ.
- `increasing` / `decreasing` (a figure's trend): the slope of the per-seed points over the
  settings' ranks (least squares, t-test with N − 2 degrees of freedom, scipy's `linregress`);
  the gain is the fitted change from the first setting to the last.
- `peak` (a best setting, an inverted U when it is inside the range): the setting `at` beats
  every other one, an intersection-union test of the pairwise gains.
- `plateau` (saturation): every setting from `at` on is equivalent to `at` within ±δ.

δ is the claim's `margin` (points), else the experiment's band for the metric. A claim whose paper
gain compares unlike settings says how in `unlike:`; its test is the suite's like-for-like gain,
whose size is then not compared with the paper's (no *holds, smaller / larger*). Each test gives a
p-value for the paper's Holm family and a standard error for its failure test (`claim_decision`).
"""

from __future__ import annotations


from dmlbench.verdicts import claims as gain_tests

PAIR_KINDS = ("gain", "equivalent", "no_gain")
SHAPE_KINDS = ("increasing", "decreasing", "peak", "plateau")
KINDS = PAIR_KINDS + SHAPE_KINDS
EQUIVALENT, DIFFERS = gain_tests.EQUIVALENT, gain_tests.DIFFERS
BEST_QUOTED = "best quoted"  # `worse:` of a gain claim over the best of the paper's quoted rows, part by part


def quoted_number(quoted: dict, row: str, dataset: str, metric: str) -> tuple[str, float] | None:
    """(name, number) of the quoted row `row` (or of the best quoted row, `BEST_QUOTED`) on a
    dataset and metric; None where `row` is not quoted there. `quoted`: row → dataset → metric →
    the paper's printed number."""
    found = [
        (name, float(per.get(dataset, {})[metric]))
        for name, per in quoted.items()
        if (row == BEST_QUOTED or name == row) and metric in per.get(dataset, {})
    ]
    return max(found, key=lambda item: item[1]) if found else None


def listed(value) -> list:
    return list(value) if isinstance(value, list) else [value]


def rows_text(claim: dict, rows: dict | None = None) -> str:
    """The claim's rows in words, each by its name in `rows` (id → the paper's name) where given."""
    name = (rows or {}).get
    kind = claim.get("kind", "gain")
    if kind in PAIR_KINDS:
        over = f" at {', '.join(claim['variants'])}" if "variants" in claim else ""
        better, worse = name(claim["better"], claim["better"]), name(claim["worse"], claim["worse"])
        return f"{better} {'≈' if kind == 'equivalent' else '−'} {worse}{over}"
    return f"{name(claim['method'], claim['method'])} over {', '.join(claim['variants'])}" + (
        f" ({kind} at {claim['at']})" if "at" in claim else f" ({kind})"
    )


def part_rows(claim: dict) -> list[tuple[tuple[str, ...], str, str]]:
    """The claim's parts: (rows, dataset, metric), rows (better, worse) of a pair or a peak's or
    plateau's pairwise comparison, or a trend's settings in order."""
    kind = claim.get("kind", "gain")
    parts = [(d, m) for d in listed(claim["dataset"]) for m in listed(claim["metric"])]
    if kind in ("increasing", "decreasing"):
        return [(tuple(f"{claim['method']}@{v}" for v in claim["variants"]), d, m) for d, m in parts]
    if kind in PAIR_KINDS:
        suffixes = [f"@{v}" for v in claim["variants"]] if "variants" in claim else [""]
        return [((claim["better"] + v, claim["worse"] + v), d, m) for v in suffixes for d, m in parts]
    rows = [f"{claim['method']}@{v}" for v in claim["variants"]]
    top = f"{claim['method']}@{claim['at']}"
    later = rows[rows.index(top) + 1 :]
    return [((top, r), d, m) for d, m in parts for r in (rows if kind == "peak" else later) if r != top]


def evaluate(claim: dict, per_seed, delta_of, quoted: dict | None = None) -> dict | str:
    """The claim's test: {gain, low, high, p, se, df, parts, …}, or the verdict why there is none.
    `per_seed(row, dataset, metric)` → {seed: our number}; `delta_of(metric)` → δ; `quoted`: the
    experiment's quoted rows (`quoted_number`), against which a gain claim may be made."""
    kind = claim.get("kind", "gain")
    if kind in ("increasing", "decreasing"):
        return _joint([_trend(claim, per_seed, rows, d, m) for rows, d, m in part_rows(claim)])
    tested = []
    for (better, worse), dataset, metric in part_rows(claim):
        ours = per_seed(better, dataset, metric)
        competitor = quoted_number(quoted or {}, worse, dataset, metric) if kind == "gain" else None
        theirs = {seed: competitor[1] for seed in ours} if competitor else per_seed(worse, dataset, metric)
        result = gain_tests.test(ours, theirs)
        if isinstance(result, str):
            tested.append(result)
            continue
        part = {**result.__dict__, "delta": claim.get("margin") or delta_of(metric)}
        part["failed"] = [
            f"{row} on {dataset} seed {seed}"
            for row, seeds in ((better, result.failed_better), (worse, result.failed_worse))
            for seed in seeds
        ]
        part["on"] = {"rows": [better, worse], "dataset": dataset, "metric": metric}  # what the part compares
        if competitor:
            part["quoted"] = {"row": competitor[0], "number": competitor[1]}
        if result.paired:  # per seed, for a claim's gain averaged over its parts (`claim_decision`)
            part["differences"] = {
                str(s): ours[s] - theirs[s] for s in ours if ours[s] == ours[s] and theirs[s] == theirs[s]
            }
        part["p"] = _p(kind, part)
        tested.append(part)
    return _joint(tested)


def _p(kind: str, part: dict) -> float:
    """The part's p-value for the claim's kind (the gain's two-sided p for a gain)."""
    from scipy import stats

    if kind in ("gain", "peak"):
        return part["p"]
    gain, se, df, delta = part["gain"], part["se"], part["df"], part["delta"]
    if not se > 0:
        inside = gain < delta if kind == "no_gain" else abs(gain) < delta
        return 0.0 if inside else 1.0
    upper = float(stats.t.sf((delta - gain) / se, df))  # H0: gain ≥ δ
    if kind == "no_gain":
        return upper
    return max(upper, float(stats.t.sf((gain + delta) / se, df)))  # and H0: gain ≤ −δ


def _trend(claim: dict, per_seed, rows: tuple[str, ...], dataset: str, metric: str) -> dict | str:
    from scipy import stats

    xs, ys, failed = [], [], []
    for rank, row in enumerate(rows):
        numbers = per_seed(row, dataset, metric)
        values = [v for v in numbers.values() if v == v]
        failed += [f"{row} on {dataset} seed {seed}" for seed, v in sorted(numbers.items()) if v != v]
        if not values:
            return gain_tests.NOT_RUN
        xs += [rank] * len(values)
        ys += values
    if len(xs) < gain_tests.MIN_SEEDS:
        return gain_tests.FEW_SEEDS
    fit = stats.linregress(xs, ys)
    if not float(fit.stderr) > 0:  # the points lie on a line (or are all equal): no residual spread
        return gain_tests.NO_SPREAD
    span, sign = len(claim["variants"]) - 1, (1.0 if claim["kind"] == "increasing" else -1.0)
    df = len(xs) - 2
    se = float(fit.stderr) * span
    half = float(stats.t.ppf(1 - gain_tests.ALPHA / 2, df)) * se
    gain = sign * float(fit.slope) * span  # the fitted change over the range, in the claim's direction
    return {
        "gain": gain,
        "low": gain - half,
        "high": gain + half,
        "p": float(fit.pvalue),
        "se": se,
        "df": float(df),
        "paired": False,
        "n_better": len(xs),
        "n_worse": len(claim["variants"]),
        "failed": failed,
        "on": {"rows": list(rows), "dataset": dataset, "metric": metric},
    }


def _joint(parts: list) -> dict | str:
    """One claim from its parts (intersection-union): the part with the largest p decides it and
    is shown; its p is the claim's. Parts the preset does not run are left out and counted
    (`parts_run` of `parts_total`: a partial test, `PARTIAL`); a run part without a test (too few
    seeds, no spread) leaves none. The failed seeds of every part are the claim's (`failed`)."""
    run = [part for part in parts if part != gain_tests.NOT_RUN]
    if not run:
        return gain_tests.NOT_RUN
    if any(isinstance(part, str) for part in run):
        return next(part for part in run if isinstance(part, str))
    deciding = max(run, key=lambda part: part["p"])
    failed = [seed for part in run for seed in part["failed"]]
    return {**deciding, "parts": run, "parts_run": len(run), "parts_total": len(parts), "failed": failed}


def verdict_text(entry: dict) -> str:
    """The verdict's symbol and word, with what the parts run say where only some ran."""
    text = f"{gain_tests.SYMBOLS[entry['verdict']]} {entry['verdict']}"
    if entry["verdict"] == gain_tests.PARTIAL:
        text += f" ({entry['parts_run']} of {entry['parts_total']} parts run: {entry['verdict_on_parts_run']})"
    return text


def test_text(entry: dict) -> str:
    """How a tested claim was tested, in a few words (the certificate's "test" column)."""
    kind, parts = entry["kind"], entry.get("parts") or [entry]
    if kind in ("increasing", "decreasing"):
        text = f"trend t, {entry['n_better']} points"
    elif entry.get("quoted"):
        quoted = entry["quoted"]
        text = f"one-sample t against the quoted {quoted['row']} ({quoted['number']:g}), n={entry['n_better']}"
    else:
        text = ("paired t" if entry["paired"] else "Welch t") + f", n={entry['n_better']}/{entry['n_worse']}"
        if kind in ("equivalent", "plateau"):
            text += f", TOST ±{entry['delta']:.2f}"
        elif kind == "no_gain":
            text += f", one-sided < {entry['delta']:.2f}"
    text += f", all {len(parts)} parts (intersection-union)" if len(parts) > 1 else ""
    failed = entry.get("failed") or []
    if failed:  # as a number does: a failed seed is counted and named, never dropped without a word
        named = ", ".join(failed[:3]) + (" …" if len(failed) > 3 else "")
        text += f"; {len(failed)} failed seed{'s' if len(failed) > 1 else ''} left out ({named})"
    return text
