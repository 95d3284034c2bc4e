rule train:
    input:
        manifest=lambda w: PLAN.manifest(w.dataset),
        store=lambda w: PLAN.store_marker(run_of(w)),
        splits=lambda w: PLAN.split_inputs(run_of(w)),   # a run trained on folds (suite.knobs)
    output:
        f"{RUN_DIR}/model.pt",
    params:
        spec=run_spec,
        run_dir=RUN_DIR,
        slot=gpu_slot(),
    resources:
        gpu=1,
    log:
        f"logs/{{preset}}/train/{{experiment}}/{{dataset}}/{{method}}/seed{{seed}}.log",
    shell:
        "{params.slot} {PYTHON} -m dmlbench train --spec {params.spec:q} --run-dir {params.run_dir:q}"
        " 2> >(tee -a {log:q} >&2)"
