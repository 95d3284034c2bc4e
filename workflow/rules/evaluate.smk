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
        "{params.slot} {PYTHON} -m dmlbench evaluate --run-dir {params.run_dir:q} --output {output:q}"
        " 2> >(tee {log:q} >&2)"


rule reference:
    input:
        lambda w: PLAN.reference_inputs(w.reference),
    output:
        f"results/{{preset}}/reference/{{reference}}/metrics.json",
    params:
        spec=lambda w: json.dumps(PLAN.reference_spec(w.reference), sort_keys=True),
        slot=gpu_slot(),
    resources:
        gpu=1,
    log:
        f"logs/{{preset}}/reference/{{reference}}.log",
    shell:
        "{params.slot} {PYTHON} -m dmlbench reference --spec {params.spec:q} --output {output:q}"
        " 2> >(tee {log:q} >&2)"
