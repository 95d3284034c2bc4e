rule reference:
    input:
        lambda w: JOBS.reference_inputs(w.reference),
    output:
        f"results/{{preset}}/reference/{{reference}}/metrics.json",
    params:
        spec=lambda w: as_json(numbers_and_side(JOBS.reference_spec(w.reference))[0]),   # the rerun trigger
        side=lambda w: Untracked(lambda: as_json(numbers_and_side(JOBS.reference_spec(w.reference))[1])),
    resources:
        gpu=1,
        runtime=job_minutes(0.0),   # an evaluation: the floor (SLURM)
    log:
        f"logs/{{preset}}/reference/{{reference}}.log",
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench reference --spec {params.spec:q} --side {params.side:q} --output {output:q}"
        " 2> >(tee {log:q} >&2)"
