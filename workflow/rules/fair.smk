# The fair protocol (`suite.fair`, dmlbench/config/fair_specs.py): split file → per method × dataset
# search rounds (each: ask its trial slots, train their folds, tell) → best → final repetitions
# (each: train its folds) → summary → tables. One GPU job per round and per repetition.
FAIR_DIR = "results/{preset}/{experiment}/{dataset}/{method}"


def round_runs(w):
    return PLAN.fair_round_runs(w.experiment, w.dataset, w.method, w.round)


def repetition_runs(w):
    return PLAN.fair_repetition_runs(w.experiment, w.dataset, w.method, w.repetition)


rule fair_splits:
    input:
        "{folder}/manifest.csv",
    output:
        "{folder}/fair_folds{folds}.csv",
    wildcard_constraints:
        folder=rf"{re.escape(PLAN.data_dir)}/{DATASET_NAME}(/cache\d+)?",
        folds=r"\d+",
    shell:
        "{PYTHON} -m dmlbench fair-splits --manifest {input:q} --folds {wildcards.folds} --output {output:q}"


rule fair_round:
    input:
        lambda w: PLAN.fair_round_inputs(w.experiment, w.dataset, w.method, w.round),
    output:
        f"{FAIR_DIR}/search/round{{round}}.json",
    params:
        settings=lambda w: PLAN.fair_round_trigger(w.experiment, w.dataset, w.method, w.round),
        spec=lambda w: Untracked(lambda: as_json(PLAN.fair_round_spec(w.experiment, w.dataset, w.method, w.round))),
        side=lambda w: Untracked(lambda: as_json(PLAN.fair_side(w.experiment, w.dataset, w.method))),
    resources:
        gpu=1,
        runtime=job_runtime(round_runs),   # minutes (SLURM)
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/round{{round}}.log",
    shell:
        "{GPU_SLOT} {PYTHON} -m dmlbench fair-round --spec {params.spec:q} --side {params.side:q}"
        " --output {output:q} 2> >(tee -a {log:q} >&2)"


rule fair_best:
    input:
        lambda w: PLAN.fair_best_inputs(w.experiment, w.dataset, w.method),
    output:
        best=f"{FAIR_DIR}/search/best.json",
        trials=f"{FAIR_DIR}/search/trials.csv",
    params:
        results=lambda w: PLAN.fair_results(w.experiment, w.dataset, w.method),
    shell:
        "{PYTHON} -m dmlbench fair-best --results {params.results:q} --output {output.best:q} --trials {output.trials:q}"


rule fair_repetition:
    input:
        lambda w: PLAN.fair_repetition_inputs(w.experiment, w.dataset, w.method),
    output:
        f"{FAIR_DIR}/final/rep{{repetition}}/folds.json",
    params:
        settings=lambda w: PLAN.fair_fingerprint(w.experiment, w.dataset, w.method),   # the rerun trigger
        spec=lambda w: Untracked(lambda: as_json(
            PLAN.fair_repetition_spec(w.experiment, w.dataset, w.method, w.repetition))),
        side=lambda w: Untracked(lambda: as_json(PLAN.fair_side(w.experiment, w.dataset, w.method))),
    resources:
        gpu=1,
        runtime=job_runtime(repetition_runs),   # minutes (SLURM)
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/rep{{repetition}}.log",
    shell:
        "{GPU_SLOT} {PYTHON} -m dmlbench fair-repetition --spec {params.spec:q} --side {params.side:q}"
        " --best {input[0]:q} --output {output:q} 2> >(tee -a {log:q} >&2)"


rule fair_summary:
    input:
        lambda w: PLAN.fair_summary_inputs(w.experiment, w.dataset, w.method),
    output:
        f"{FAIR_DIR}/final/summary.json",
    params:
        spec=lambda w: as_json(PLAN.fair_summary_spec(w.experiment, w.dataset, w.method)),
        embeddings=lambda w: PLAN.fair_test_embeddings(w.experiment, w.dataset, w.method),
    shell:
        "{PYTHON} -m dmlbench fair-summary --spec {params.spec:q} --embeddings {params.embeddings:q}"
        " --output {output:q}"


rule fair_aggregate:
    input:
        lambda w: PLAN.fair_aggregate_inputs(w.experiment),
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
        spec=lambda w: json.dumps(PLAN.fair_aggregate_spec(w.experiment)),
        folder=f"reports/{{preset}}/{{experiment}}",
    shell:
        "{PYTHON} -m dmlbench fair-aggregate --spec {params.spec:q} --output-dir {params.folder:q}"
