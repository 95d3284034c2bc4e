rule train:
    input:
        lambda w: PLAN.train_inputs(run_of(w)),   # manifest, store, fold splits (suite.knobs)
    output:   # and model.pt, not declared: a lost metrics.json is written again from the model and its
              # evaluation when they are this run's, instead of Snakemake deleting the model to train again
        metrics=f"{RUN_DIR}/metrics.json",
    params:
        spec=lambda w: as_json(run_numbers(w)),   # the rerun trigger
        side=lambda w: Untracked(lambda: as_json(run_side(w))),
        run_dir=RUN_DIR,
    resources:
        gpu=1,
        runtime=job_runtime(lambda w: [run_of(w).path(PRESET)]),   # minutes (SLURM)
    log:
        TRAIN_LOG,
    shell:
        "{GPU_SLOT} {PYTHON} -m dmlbench train --spec {params.spec:q} --side {params.side:q}"
        " --run-dir {params.run_dir:q} --metrics {output.metrics:q} 2> >(tee -a {log:q} >&2)"
