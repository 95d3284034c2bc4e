# The fair protocol (`suite.fair`, dmlbench/config/fair_specs.py): split file → per method × dataset
# search rounds in turn (each: ask its trial slots, train their folds, tell; under SLURM
# `rounds_per_job` of them one submission) → best → final jobs (each: `repetitions_per_job`
# repetitions, training their folds; its output the last one's record) → summary → tables. No
# file names a grouping: regrouping finished jobs reruns nothing.
from dmlbench.orchestration import slurm_groups

FAIR_DIR = "results/{preset}/{experiment}/{dataset}/{method}"


def group(w):
    """The final job whose last repetition is {last}."""
    return PLAN.fair_group_ending(w.experiment, w.last)


def group_runs(w):
    return PLAN.fair_group_runs(w.experiment, w.dataset, w.method, group(w))


rule fair_splits:
    input:
        "{folder}/manifest.csv",
    output:
        "{folder}/fair_folds{folds}.csv",
    wildcard_constraints:
        folder=rf"{re.escape(PLAN.data_dir)}/{DATASET_NAME}(/cache\d+)?",
        folds=r"\d+",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench fair-splits --manifest {input:q} --folds {wildcards.folds} --output {output:q}"


rule fair_round:
    input:
        lambda w: JOBS.fair_round_inputs(w.experiment, w.dataset, w.method, w.round),
    output:
        f"{FAIR_DIR}/search/round{{round}}.json",
    wildcard_constraints:
        round=r"\d+",
    group:   # under SLURM: up to `rounds_per_job` rounds in turn, one submission (local runs ignore groups)
        lambda w: slurm_groups.group_id(PLAN, w.experiment, w.dataset, w.method, w.round)
    params:
        settings=lambda w: JOBS.fair_round_trigger(w.experiment, w.dataset, w.method, w.round),
        spec=lambda w: Untracked(lambda: as_json(JOBS.fair_round_job(w.experiment, w.dataset, w.method, w.round))),
        side=lambda w: Untracked(lambda: as_json(JOBS.fair_side(w.experiment, w.dataset, w.method))),
    resources:
        gpu=1,
        runtime=lambda w, attempt: slurm_groups.round_minutes(PLAN, w.experiment, w.dataset, w.method, w.round, attempt),
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/round{{round}}.log",
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench fair-round --spec {params.spec:q} --side {params.side:q}"
        " 2> >(tee -a {log:q} >&2)"   # the round's record: the output


rule fair_best:
    input:
        lambda w: JOBS.fair_best_inputs(w.experiment, w.dataset, w.method),
    output:
        best=f"{FAIR_DIR}/search/best.json",
        trials=f"{FAIR_DIR}/search/trials.csv",
    params:
        results=lambda w: JOBS.fair_results(w.experiment, w.dataset, w.method),
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench fair-best --results {params.results:q} --output {output.best:q} --trials {output.trials:q}"


rule fair_final:
    input:
        lambda w: JOBS.fair_repetition_inputs(w.experiment, w.dataset, w.method),
    output:
        f"{FAIR_DIR}/final/rep{{last}}/folds.json",
    wildcard_constraints:
        last=r"\d+",
    params:
        settings=lambda w: JOBS.fair_group_trigger(w.experiment, w.dataset, w.method, group(w)),
        spec=lambda w: Untracked(lambda: as_json(JOBS.fair_group_spec(w.experiment, w.dataset, w.method, group(w)))),
        side=lambda w: Untracked(lambda: as_json(JOBS.fair_side(w.experiment, w.dataset, w.method))),
    resources:
        gpu=1,
        runtime=job_runtime(group_runs),   # minutes (SLURM)
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/rep{{last}}.log",
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench fair-final --spec {params.spec:q} --side {params.side:q}"
        " --best {input[0]:q} 2> >(tee -a {log:q} >&2)"   # its last repetition's record: the output


rule fair_summary:
    input:
        lambda w: JOBS.fair_summary_inputs(w.experiment, w.dataset, w.method),
    output:
        f"{FAIR_DIR}/final/summary.json",
    params:
        spec=lambda w: as_json(JOBS.fair_summary_spec(w.experiment, w.dataset, w.method)),
        embeddings=lambda w: JOBS.fair_test_embeddings(w.experiment, w.dataset, w.method),
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench fair-summary --spec {params.spec:q} --embeddings {params.embeddings:q}"
        " --output {output:q}"


rule fair_aggregate:
    input:
        lambda w: JOBS.fair_aggregate_inputs(w.experiment),
    output:
        table=f"reports/{{preset}}/{{experiment}}/fair_table.csv",
        markdown=f"reports/{{preset}}/{{experiment}}/fair_table.md",
        paper=f"reports/{{preset}}/{{experiment}}/paper_vs_fair.csv",
        pairwise=f"reports/{{preset}}/{{experiment}}/fair_pairwise.csv",
        ranking=f"reports/{{preset}}/{{experiment}}/fair_ranking.json",
        critical_difference=report(f"reports/{{preset}}/{{experiment}}/fair_cd.png",
                                   caption="../report/fair.rst", category="{experiment}"),
        figure=report(f"reports/{{preset}}/{{experiment}}/fair_map_r.png",
                      caption="../report/fair.rst", category="{experiment}"),
    params:
        spec=lambda w: json.dumps(JOBS.fair_aggregate_spec(w.experiment)),
        folder=f"reports/{{preset}}/{{experiment}}",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench fair-aggregate --spec {params.spec:q} --output-dir {params.folder:q}"
