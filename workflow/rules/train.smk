from dmlbench.orchestration import slurm_packs


def train_folder(w):
    return run_of(w).path(PRESET)


rule train:
    input:
        lambda w: JOBS.train_inputs(run_of(w)),   # manifest, store, fold splits (suite.knobs)
    output:   # and model.pt, not declared: a lost metrics.json is written again from the model and its
              # evaluation when they are this run's, instead of Snakemake deleting the model to train again
        metrics=f"{RUN_DIR}/metrics.json",
    params:
        spec=lambda w: as_json(run_numbers(w)),   # the rerun trigger
        side=lambda w: Untracked(lambda: as_json(run_side(w))),
    group:   # under SLURM, once projected: short trainings packed, in turn in one submission (local runs ignore groups)
        lambda w: slurm_packs.group_id(PLAN, train_folder(w), workflow)
    resources:
        gpu=1,
        runtime=lambda w, attempt: slurm_packs.minutes(PLAN, train_folder(w), attempt),   # minutes (SLURM)
    log:
        TRAIN_LOG,
    shell:
        "gpu_slot \"$DMLBENCH_PYTHON\" -m dmlbench train --spec {params.spec:q} --side {params.side:q}"
        " --metrics {output.metrics:q} 2> >(tee -a {log:q} >&2)"   # the run folder: the metrics file's


rule train_alias:   # a run that is an earlier run's training (dmlbench/config/run_dedup.py): its folder a link
    input:
        lambda w: JOBS.alias_input(run_of(w)),   # a file no rule makes for a run trained in its own folder
    output:
        metrics=f"{RUN_DIR}/metrics.json",
    params:
        settings=lambda w: as_json(numbers_and_side(PLAN.trained_settings(run_of(w)))[0]),   # the rerun trigger
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench link-run --trained {input:q} --metrics {output.metrics:q}"


ruleorder: train_alias > train
