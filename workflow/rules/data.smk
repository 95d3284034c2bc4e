# the cache and store steps decode on every core Snakemake gives them (capped at --cores)
DECODE_THREADS = 64
# data.max_image_pixels where set; not a param, so raising it after a refusal reruns no finished step
MAX_PIXELS = PLAN.preset["data"].get("max_image_pixels")
IMAGE_LIMIT = f"--max-image-pixels {int(MAX_PIXELS)}" if MAX_PIXELS else ""


rule prepare:
    output:
        f"{PLAN.data_dir}/{{dataset}}/manifest.csv",
    params:
        spec=lambda w: json.dumps(JOBS.prepare_spec(w.dataset)),
    log:
        f"logs/{PRESET}/prepare/{{dataset}}.log",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench prepare --spec {params.spec:q} --output {output:q} 2> >(tee {log:q} >&2)"


rule cache:
    input:
        f"{PLAN.data_dir}/{{dataset}}/manifest.csv",
    output:
        f"{PLAN.data_dir}/{{dataset}}/cache{{size}}/manifest.csv",
    wildcard_constraints:
        size=r"\d+",
    threads: DECODE_THREADS
    log:
        f"logs/{PRESET}/cache/{{dataset}}-{{size}}.log",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench cache --manifest {input:q} --size {wildcards.size} --output {output:q}"
        " --workers {threads} {IMAGE_LIMIT}"
        " 2> >(tee {log:q} >&2)"


rule store:
    input:
        "{folder}/manifest.csv",
    output:
        "{folder}/store{side}/store.json",
    wildcard_constraints:
        folder=rf"{re.escape(PLAN.data_dir)}/{DATASET_NAME}(/cache\d+)?",
        side=r"\d+",
    params:
        folder=lambda w: f"{w.folder}/store{w.side}",
    threads: DECODE_THREADS
    log:
        f"logs/{PRESET}/store/{{folder}}-{{side}}.log",
    shell:
        "\"$DMLBENCH_PYTHON\" -m dmlbench store --manifest {input:q} --side {wildcards.side}"
        " --output {params.folder:q} --workers {threads} {IMAGE_LIMIT} 2> >(tee {log:q} >&2)"
