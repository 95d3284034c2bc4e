rule reference:
    input:
        lambda w: PLAN.reference_inputs(w.reference),
    output:
        f"results/{{preset}}/reference/{{reference}}/metrics.json",
    params:
        spec=lambda w: json.dumps(PLAN.reference_spec(w.reference), sort_keys=True),
    resources:
        gpu=1,
    log:
        f"logs/{{preset}}/reference/{{reference}}.log",
    shell:
        "{GPU_SLOT} {PYTHON} -m dmlbench reference --spec {params.spec:q} --output {output:q}"
        " 2> >(tee {log:q} >&2)"
