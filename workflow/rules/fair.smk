# The fair protocol (`suite.fair`, dmlbench/config/fair_specs.py): split file → per method × dataset
# search jobs (each: `rounds_per_job` rounds in turn, a round asking its trial slots, training their
# folds, telling) → best → final jobs (each: `repetitions_per_job` repetitions, training their folds)
# → summary → tables.
FAIR_DIR = "results/{preset}/{experiment}/{dataset}/{method}"


def stage_runs(w):
    return PLAN.fair_stage_runs(w.experiment, w.dataset, w.method, w.stage)


def group_runs(w):
    return PLAN.fair_group_runs(w.experiment, w.dataset, w.method, w.group)


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


rule fair_stage:
    input:
        lambda w: JOBS.fair_stage_inputs(w.experiment, w.dataset, w.method, w.stage),
    output:
        f"{FAIR_DIR}/search/stage{{stage}}.json",
    params:
        settings=lambda w: JOBS.fair_stage_trigger(w.experiment, w.dataset, w.method, w.stage),
        spec=lambda w: Untracked(lambda: as_json(JOBS.fair_stage_spec(w.experiment, w.dataset, w.method, w.stage))),
        side=lambda w: Untracked(lambda: as_json(JOBS.fair_side(w.experiment, w.dataset, w.method))),
    resources:
        gpu=1,
        runtime=job_runtime(stage_runs),   # minutes (SLURM)
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/stage{{stage}}.log",
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench fair-stage --spec {params.spec:q} --side {params.side:q}"
        " --output {output:q} 2> >(tee -a {log:q} >&2)"


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
        f"{FAIR_DIR}/final/group{{group}}.json",
    params:
        settings=lambda w: JOBS.fair_fingerprint(w.experiment, w.dataset, w.method)   # the rerun trigger
        + " repetitions " + ",".join(map(str, PLAN.fair_group_repetitions(w.experiment, w.group))),
        spec=lambda w: Untracked(lambda: as_json(JOBS.fair_group_spec(w.experiment, w.dataset, w.method, w.group))),
        side=lambda w: Untracked(lambda: as_json(JOBS.fair_side(w.experiment, w.dataset, w.method))),
    resources:
        gpu=1,
        runtime=job_runtime(group_runs),   # minutes (SLURM)
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/group{{group}}.log",
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench fair-final --spec {params.spec:q} --side {params.side:q}"
        " --best {input[0]:q} --output {output:q} 2> >(tee -a {log:q} >&2)"


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
