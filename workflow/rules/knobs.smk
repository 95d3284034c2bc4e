# The knob experiment (`suite.knobs`, dmlbench/config/knob_specs.py): its steps are train jobs
# of the plan's runs; a step that moves the evaluation knob is one job per seed that trains its
# fold runs and joins their models (knob_joined, dmlbench/config/knob_step_jobs.py); one job
# writes the report folder (knob_aggregate).
KNOB_STEP_DIR = "results/{preset}/{experiment}/{dataset}/{method}/seed{seed}"
KNOB_STEP = r"[A-Za-z0-9_.-]+@[A-Za-z0-9_-]+"   # <method>@<paper>-<step>: no dot after the @, so no .fold<k>


rule knob_joined:
    input:
        lambda w: JOBS.knob_joined_inputs(w.experiment, w.dataset, w.method, int(w.seed)),
    output:   # and each fold run's model.pt, not declared (as the train rule's)
        concatenated=f"{KNOB_STEP_DIR}/concatenated.json",
        folds=[f"results/{{preset}}/{{experiment}}/{{dataset}}/{{method}}.fold{k}/seed{{seed}}/metrics.json"
               for k in range(PLAN.knob_folds)],
    wildcard_constraints:
        method=KNOB_STEP,
    params:
        settings=lambda w: JOBS.knob_joined_settings(w.experiment, w.dataset, w.method, int(w.seed)),
        spec=lambda w: Untracked(lambda: as_json(JOBS.knob_joined_spec(w.experiment, w.dataset, w.method,
                                                                       int(w.seed)))),
    resources:
        gpu=1,
        runtime=job_runtime(lambda w: [run.path(PRESET) for run in JOBS.knob_joined_runs(
            w.experiment, w.dataset, w.method, int(w.seed))]),   # minutes (SLURM)
    log:
        f"logs/{{preset}}/knobs/{{experiment}}/{{dataset}}/{{method}}/seed{{seed}}.log",
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench knob-joined --spec {params.spec:q} --output {output.concatenated:q}"
        " 2> >(tee -a {log:q} >&2)"


ruleorder: knob_joined > train   # a joined step's fold runs are trained by its job, not one by one


rule knob_aggregate:
    input:
        lambda w: JOBS.knob_aggregate_inputs(w.experiment),
    output:
        table=f"reports/{{preset}}/{{experiment}}/attribution.csv",
        markdown=f"reports/{{preset}}/{{experiment}}/attribution.md",
        steps=f"reports/{{preset}}/{{experiment}}/steps.csv",
        landing=f"reports/{{preset}}/{{experiment}}/landing.json",
        figures=directory(f"reports/{{preset}}/{{experiment}}/waterfalls"),   # one per paper × dataset
    params:
        spec=lambda w: json.dumps(JOBS.knob_aggregate_spec(w.experiment)),
        folder=f"reports/{{preset}}/{{experiment}}",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench knob-aggregate --spec {params.spec:q} --output-dir {params.folder:q}"
