rule aggregate:
    input:
        metrics=experiment_metrics,
        references=lambda w: JOBS.experiment_references(w.experiment),
    output:
        table=f"reports/{{preset}}/{{experiment}}/table.csv",
        markdown=f"reports/{{preset}}/{{experiment}}/table.md",
        runs=f"reports/{{preset}}/{{experiment}}/runs.csv",
        recall=report(f"reports/{{preset}}/{{experiment}}/recall_at_k.png",
                      caption="../report/recall.rst", category="{experiment}"),
        curves=report(f"reports/{{preset}}/{{experiment}}/learning_curves.png",
                      caption="../report/curves.rst", category="{experiment}"),
    params:
        spec=lambda w: json.dumps(JOBS.aggregate_spec(w.experiment)),
        folder=f"reports/{{preset}}/{{experiment}}",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench aggregate --spec {params.spec:q} --metrics {input.metrics:q}"
        " --references {input.references:q}"
        " --output-dir {params.folder:q}"


rule analyse:
    output:
        summary=f"reports/{{preset}}/{{experiment}}/summary.md",
        figure=report(f"reports/{{preset}}/{{experiment}}/figure.png",
                      caption="../report/analysis.rst", category="{experiment}"),
    params:
        spec=lambda w: json.dumps(JOBS.analysis_spec(w.experiment)),
        folder=f"reports/{{preset}}/{{experiment}}",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench analyse --spec {params.spec:q} --output-dir {params.folder:q}"


rule certificate:
    input:
        lambda w: verdict_spec.certificate_inputs(PLAN, w.paper),
    output:
        markdown=f"reports/{{preset}}/{{paper}}/certificate.md",
        json=f"reports/{{preset}}/{{paper}}/certificate.json",
    wildcard_constraints:
        paper="[a-z0-9_]+",
    params:
        decided_by=lambda w: verdict_spec.certificate_trigger(PLAN, w.paper),  # claims, margins, numbers: rerun on change
        config=Untracked(json.dumps(config)),   # what else it changes reaches these jobs through their inputs
        config_dir=Untracked(str(CONFIG_DIR)),
        folder=f"reports/{{preset}}/{{paper}}",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench verdict {wildcards.paper} --config-dir {params.config_dir:q}"
        " --config {params.config:q} --output-dir {params.folder:q} > /dev/null"


rule results_table:
    input:
        every_runs_metrics,
    output:
        f"results/{PRESET}/runs.parquet",
    params:
        config=Untracked(json.dumps(config)),   # what it changes reaches these jobs through their inputs
        config_dir=Untracked(str(CONFIG_DIR)),
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench results-table --config-dir {params.config_dir:q} --config {params.config:q}"
        " --output {output:q}"


rule ranking_vs_fair:
    input:
        lambda w: JOBS.ranking_vs_fair_inputs(w.experiment),
    output:
        markdown=f"reports/{{preset}}/{{experiment}}/ranking_vs_fair.md",
        table=f"reports/{{preset}}/{{experiment}}/ranking_vs_fair.csv",
    params:
        spec=lambda w: json.dumps(JOBS.ranking_vs_fair_spec(w.experiment)),
        folder=f"reports/{{preset}}/{{experiment}}",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench ranking-vs-fair --spec {params.spec:q} --output-dir {params.folder:q}"


rule retrieved:   # the preset's `retrieved:` experiments: per dataset, fixed queries' top-k images, two runs
    input:
        lambda w: JOBS.retrieved_inputs(w.experiment, w.dataset),   # the runs' metrics.json: drawn again when retrained
    output:
        json=f"reports/{{preset}}/{{experiment}}/retrieved/{{dataset}}.json",
        figure=f"reports/{{preset}}/{{experiment}}/retrieved/{{dataset}}.png",
    params:
        spec=lambda w: json.dumps(JOBS.retrieved_spec(w.experiment, w.dataset)),   # runs, fingerprints, k: rerun on change
    resources:
        gpu=1,
        runtime=30,   # minutes (SLURM): two embeddings of a test split
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench retrieved --spec {params.spec:q}"
        " --json {output.json:q} --figure {output.figure:q}"


rule report:
    input:
        [JOBS.report_marker(experiment) for experiment in PLAN.experiment_ids],
        JOBS.retrieved_outputs(),
        [f"reports/{PRESET}/{experiment}/ranking_vs_fair.md" for experiment in JOBS.ranked_against_fair()],
        [f"reports/{PRESET}/{paper}/certificate.json" for paper in verdict_spec.certified_papers(PLAN)],
        f"results/{PRESET}/runs.parquet",
    output:
        f"reports/{PRESET}/index.html",
    params:
        config=Untracked(json.dumps(config)),   # what it changes reaches these jobs through their inputs
        config_dir=Untracked(str(CONFIG_DIR)),
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench report --config-dir {params.config_dir:q} --config {params.config:q}"
        " --output {output:q}"
