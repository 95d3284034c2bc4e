# The fair protocol (`suite.fair`, dmlbench/config/fair_specs.py): split file → per method × dataset
# trial slots (ask → fold trainings → tell) → best → final fold trainings → summary → tables.
FAIR_DIR = "results/{preset}/{experiment}/{dataset}/{method}"


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


rule fair_ask:
    input:
        lambda w: PLAN.fair_ask_inputs(w.experiment, w.dataset, w.method, w.trial),
    output:
        f"{FAIR_DIR}/search/trial{{trial}}/params.json",
    params:
        spec=lambda w: json.dumps(PLAN.fair_ask_spec(w.experiment, w.dataset, w.method, w.trial), sort_keys=True),
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/ask{{trial}}.log",
    shell:
        "{PYTHON} -m dmlbench fair-ask --spec {params.spec:q} --output {output:q} 2> >(tee {log:q} >&2)"


def fair_run(w, stage):
    return PLAN.find_fair_run(w.experiment, w.dataset, w.method, stage, w.index, w.fold)


rule fair_trial_fold:
    input:
        lambda w: PLAN.fair_run_inputs(fair_run(w, "search")),
    output:
        f"{FAIR_DIR}/search/trial{{index}}/fold{{fold}}/validation.json",
    params:
        spec=lambda w: json.dumps(PLAN.fair_run_spec(fair_run(w, "search")), sort_keys=True),
        run_dir=f"{FAIR_DIR}/search/trial{{index}}/fold{{fold}}",
        slot=gpu_slot(),
    resources:
        gpu=1,
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/trial{{index}}-fold{{fold}}.log",
    shell:
        "{params.slot} {PYTHON} -m dmlbench fair-train --spec {params.spec:q} --params {input[0]:q}"
        " --run-dir {params.run_dir:q} --output {output:q} 2> >(tee -a {log:q} >&2)"


rule fair_tell:
    input:
        params=f"{FAIR_DIR}/search/trial{{trial}}/params.json",
        folds=lambda w: PLAN.fair_tell_inputs(w.experiment, w.dataset, w.method, w.trial),
    output:
        f"{FAIR_DIR}/search/trial{{trial}}/result.json",
    params:
        spec=lambda w: json.dumps(PLAN.fair_ask_spec(w.experiment, w.dataset, w.method, w.trial), sort_keys=True),
    shell:
        "{PYTHON} -m dmlbench fair-tell --spec {params.spec:q} --params {input.params:q}"
        " --folds {input.folds:q} --output {output:q}"


rule fair_best:
    input:
        lambda w: PLAN.fair_best_inputs(w.experiment, w.dataset, w.method),
    output:
        best=f"{FAIR_DIR}/search/best.json",
        trials=f"{FAIR_DIR}/search/trials.csv",
    shell:
        "{PYTHON} -m dmlbench fair-best --results {input:q} --output {output.best:q} --trials {output.trials:q}"


rule fair_final_fold:
    input:
        lambda w: PLAN.fair_run_inputs(fair_run(w, "final")),
    output:
        validation=f"{FAIR_DIR}/final/rep{{index}}/fold{{fold}}/validation.json",
        test=f"{FAIR_DIR}/final/rep{{index}}/fold{{fold}}/test.npz",
    params:
        spec=lambda w: json.dumps(PLAN.fair_run_spec(fair_run(w, "final")), sort_keys=True),
        run_dir=f"{FAIR_DIR}/final/rep{{index}}/fold{{fold}}",
        slot=gpu_slot(),
    resources:
        gpu=1,
    log:
        f"logs/{{preset}}/fair/{{experiment}}/{{dataset}}/{{method}}/rep{{index}}-fold{{fold}}.log",
    shell:
        "{params.slot} {PYTHON} -m dmlbench fair-train --spec {params.spec:q} --params {input[0]:q}"
        " --run-dir {params.run_dir:q} --output {output.validation:q} --test-output {output.test:q}"
        " 2> >(tee -a {log:q} >&2)"


rule fair_summary:
    input:
        lambda w: PLAN.fair_summary_inputs(w.experiment, w.dataset, w.method),
    output:
        f"{FAIR_DIR}/final/summary.json",
    params:
        spec=lambda w: json.dumps(PLAN.fair_summary_spec(w.experiment, w.dataset, w.method), sort_keys=True),
    shell:
        "{PYTHON} -m dmlbench fair-summary --spec {params.spec:q} --embeddings {input:q} --output {output:q}"


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
