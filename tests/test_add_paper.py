"""docs/howto/add-paper.md as written, in a temporary copy: its blocks (the papers.yaml line, the
experiment file, the review entry) added to the files the page names before each, its table put in
the small presets, then planned, run on the fixtures by the page's commands and found on the report
page in its layout; and the layout and claims-review checks, which read the whole catalogue,
failing on the new paper until it is right."""

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from dmlbench.config.jobs import of as jobs_of
from dmlbench.config.plan import Plan
from dmlbench.report import aggregate, index

from conftest import CONFIG_DIR, REPO, python_env, snakemake_command
from processes import run
from test_claims_review import review_problems
from test_extending import checkout_copy
from test_paper_layouts import check_tables, page_sections, paper_tables
from test_report import fake_run

PAGE = (REPO / "docs" / "howto" / "add-paper.md").read_text()
# (file under workflow/config/, text) of each YAML block: the last such file the page names before it
BLOCKS = [
    (re.findall(r"`workflow/config/([^`]+\.yaml)`", PAGE[: m.start()])[-1], m.group(1))
    for m in re.finditer(r"```yaml\n(.*?)```", PAGE, re.S)
]
PRESETS = re.findall(r"`workflow/config/(presets/[\w-]+\.yaml)`", PAGE)  # step 5: the small presets
COMMANDS = [shlex.split(line, comments=True) for line in re.search(r"```bash\n(.*?)```", PAGE, re.S)[1].splitlines()]
ENTRY = yaml.safe_load(next(text for file, text in BLOCKS if file.startswith("experiments/")))
TABLE = next(iter(ENTRY))
PAPER, CLAIM = ENTRY[TABLE]["paper"], ENTRY[TABLE]["claims"][0]["id"]


def add_the_paper(config: Path, review: bool = True) -> None:
    """Steps 1-3: each block appended to its file (the experiment file is new)."""
    assert [file for file, _ in BLOCKS] == ["papers.yaml", f"experiments/{PAPER}.yaml", "claims_review.yaml"]
    for file, text in BLOCKS:
        if file != "claims_review.yaml" or review:
            path = config / file
            before = path.read_text() if path.exists() else ""
            path.write_text(before + ("\n" if before and not before.endswith("\n") else "") + text)


def in_the_small_presets(config: Path) -> None:
    """Step 5: the table at the end of each small preset's `experiments:` list."""
    assert PRESETS == ["presets/demo.yaml", "presets/smoke.yaml"]
    for file in PRESETS:
        text, found = re.subn(r"^(experiments: \[[^\]]*)\]", rf"\1, {TABLE}]", (config / file).read_text(), 1, re.M)
        assert found == 1, file
        (config / file).write_text(text)


def test_the_review_check_fails_on_the_new_paper_until_its_claim_is_recorded(tmp_path):
    config = shutil.copytree(CONFIG_DIR, tmp_path / "config")
    add_the_paper(config, review=False)
    plan = Plan.load(config, {"preset": "full"})
    assert PAPER in plan.papers  # tests/test_claims_review.py runs once per paper of papers.yaml
    review = yaml.safe_load((config / "claims_review.yaml").read_text())
    assert review_problems(plan, review, PAPER) == [f"{TABLE} {CLAIM}: no reviewer entry names it"]
    text = next(text for file, text in BLOCKS if file == "claims_review.yaml")
    wrong = yaml.safe_load(text.replace(f"- {CLAIM}", f"- {CLAIM}-typo"))
    assert review_problems(plan, review | wrong, PAPER) == [
        f"{wrong[PAPER][0]['reviewer']}: {TABLE} has no claims ['{CLAIM}-typo']",
        f"{TABLE} {CLAIM}: no reviewer entry names it",
    ]
    assert review_problems(plan, review | yaml.safe_load(text), PAPER) == []


def test_the_new_table_is_checked_against_its_layout_and_fails_where_the_page_departs_from_it(tmp_path):
    config = shutil.copytree(CONFIG_DIR, tmp_path / "config")
    add_the_paper(config)
    plan = Plan.load(config, {"preset": "demo", "experiments": [TABLE]})
    assert TABLE in paper_tables(plan)
    files = [fake_run(tmp_path, r, {f"recall@{k}": 0.5 for k in (1, 2, 4, 8)}) for r in plan.runs(TABLE)]
    aggregate.aggregate(jobs_of(plan).aggregate_spec(TABLE), files, tmp_path / "reports" / "demo" / TABLE)
    index.write(plan, tmp_path / "reports" / "demo" / "index.html")
    page = (tmp_path / "reports/demo/index.html").read_text()
    check_tables(page, "demo", plan)
    assert "<td class='ours'" in page_sections(page, "demo")[TABLE]
    exp = plan.experiments[TABLE]
    printed = next(iter(next(iter(exp["reported"]["ms"].values())).values())).text
    with pytest.raises(AssertionError, match=TABLE):  # a number printed with other digits than the paper's
        check_tables(page.replace(f">{printed}<", f">{float(printed)}0<", 1), "demo", plan)
    exp["layout"]["rows"] = exp["layout"]["rows"][::-1]
    with pytest.raises(AssertionError, match=TABLE):  # rows in another order than its layout's
        check_tables(page, "demo", plan)


@pytest.mark.slow
def test_the_pages_paper_is_planned_run_on_the_fixtures_and_shown_in_its_layout(tmp_path):
    root = checkout_copy(tmp_path / "checkout")
    config = root / "workflow" / "config"
    add_the_paper(config)
    in_the_small_presets(config)
    env = dict(python_env(), PYTHONPATH=str(root))

    outputs = []
    for args in COMMANDS[:3]:  # the fixtures' dry run and run, the certificate: as written
        assert args[:2] == ["python", "-m"], args
        if args[2] == "snakemake":
            command = snakemake_command(root, *args[3:], snakefile=root / "Snakefile")
        else:
            command = [sys.executable, *args[1:]]
        done = run(command, timeout=300, capture_output=True, text=True, cwd=root, env=env)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
        outputs.append(done.stdout + done.stderr)
    planned, _, verdict = outputs
    smoke = Plan.load(config, {"preset": "smoke", "experiments": [TABLE]})
    assert all(f"{r.path('smoke')}/metrics.json" in planned for r in smoke.runs(TABLE))
    assert f"{PAPER}: " in verdict and "claims" in verdict
    assert f"experiments=[{TABLE}]" in COMMANDS[3]  # on GPUs, the paper's settings: planned here
    full = Plan.load(config, {"preset": "full", "experiments": [TABLE]})
    entry = ENTRY[TABLE]
    assert len(full.runs(TABLE)) == len(entry["datasets"]) * len(entry["methods"]) * len(entry["seeds"])
    page = (root / "reports" / "smoke" / "index.html").read_text()
    check_tables(page, "smoke", smoke)
    assert "<td class='ours'" in page_sections(page, "smoke")[TABLE]
    for preset in ("smoke", "demo"):  # step 5: the whole presets plan it
        assert Plan.load(config, {"preset": preset}).runs(TABLE), preset
