# The knob experiment (`suite.knobs`, dmlbench/config/knob_specs.py): its steps are train jobs
# of the plan's runs; a step that moves the evaluation knob joins its fold models
# (knob_concatenate); one job writes the report folder (knob_aggregate).
KNOB_STEP_DIR = "results/{preset}/{experiment}/{dataset}/{method}/seed{seed}"


rule knob_concatenate:
    input:
        lambda w: [f"{folder}/metrics.json" for folder in   # their model.pt beside it
                   PLAN.knob_fold_dirs(w.experiment, w.dataset, w.method, int(w.seed))],
    output:
        f"{KNOB_STEP_DIR}/concatenated.json",
    params:
        run_dirs=lambda w: PLAN.knob_fold_dirs(w.experiment, w.dataset, w.method, int(w.seed)),
    resources:
        gpu=1,
        runtime=job_minutes(0.0),   # an evaluation: the floor (SLURM)
    log:
        f"logs/{{preset}}/knobs/{{experiment}}/{{dataset}}/{{method}}/seed{{seed}}.log",
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench knob-concatenate --run-dirs {params.run_dirs:q} --output {output:q}"
        " 2> >(tee {log:q} >&2)"


rule knob_aggregate:
    input:
        lambda w: PLAN.knob_aggregate_inputs(w.experiment),
    output:
        table=f"reports/{{preset}}/{{experiment}}/attribution.csv",
        markdown=f"reports/{{preset}}/{{experiment}}/attribution.md",
        steps=f"reports/{{preset}}/{{experiment}}/steps.csv",
        landing=f"reports/{{preset}}/{{experiment}}/landing.json",
        figures=directory(f"reports/{{preset}}/{{experiment}}/waterfalls"),   # one per paper × dataset
    params:
        spec=lambda w: json.dumps(PLAN.knob_aggregate_spec(w.experiment)),
        folder=f"reports/{{preset}}/{{experiment}}",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench knob-aggregate --spec {params.spec:q} --output-dir {params.folder:q}"
