rule prepare:
    output:
        f"{PLAN.data_dir}/{{dataset}}/manifest.csv",
    params:
        spec=lambda w: json.dumps(PLAN.prepare_spec(w.dataset)),
    log:
        f"logs/{PRESET}/prepare/{{dataset}}.log",
    shell:
        "python -m dmlbench prepare --spec {params.spec:q} --output {output} 2> >(tee {log} >&2)"


rule cache:
    input:
        f"{PLAN.data_dir}/{{dataset}}/manifest.csv",
    output:
        f"{PLAN.data_dir}/{{dataset}}/cache{{size}}/manifest.csv",
    wildcard_constraints:
        size=r"\d+",
    log:
        f"logs/{PRESET}/cache/{{dataset}}-{{size}}.log",
    shell:
        "python -m dmlbench cache --manifest {input} --size {wildcards.size} --output {output}"
        " 2> >(tee {log} >&2)"


rule store:
    input:
        "{folder}/manifest.csv",
    output:
        "{folder}/store{side}/store.json",
    wildcard_constraints:
        folder=rf"{re.escape(PLAN.data_dir)}/[a-z]+(/cache\d+)?",
        side=r"\d+",
    log:
        f"logs/{PRESET}/store/{{folder}}-{{side}}.log",
    shell:
        "python -m dmlbench store --manifest {input} --side {wildcards.side}"
        " --output {wildcards.folder}/store{wildcards.side} 2> >(tee {log} >&2)"
