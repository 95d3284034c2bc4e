rule evaluate:
    input:
        f"{RUN_DIR}/model.pt",
    output:
        f"{RUN_DIR}/metrics.json",
    params:
        run_dir=RUN_DIR,
        slot=gpu_slot(),
    resources:
        gpu=1,
    log:
        f"logs/{{preset}}/evaluate/{{experiment}}/{{dataset}}/{{method}}/seed{{seed}}.log",
    shell:
        "{params.slot} python -m dmlbench evaluate --run-dir {params.run_dir:q} --output {output:q}"
        " 2> >(tee {log:q} >&2)"
