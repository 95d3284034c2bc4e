# The README's two commands: `make demo` and `make test`. Both create .venv on first use.
VENV ?= .venv
unexport PYTHONDONTWRITEBYTECODE  # Python keeps the bytecode it compiles (the install compiles what the pipeline imports)
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
CORES ?= 2
# crop side of the preflight's probes on CPU; `make preflight PREFLIGHT_SIDE=` probes at the real size (GPU)
PREFLIGHT_SIDE ?= 64

# test processes side by side (pytest-xdist; `make test TEST_WORKERS=0` runs them one by one): one more
# than the cores, so that a core is not left idle while a worker waits on SLURM or a preflight's probes
# (2 cores: 0.61-0.62 s of wall per CPU second with 3 workers, 0.65 s with 2; docs/benchmarks.md)
TEST_WORKERS ?= $(shell echo $$(( $$( (nproc || getconf _NPROCESSORS_ONLN) 2>/dev/null ) + 1 )))

# where `make wheelhouse` writes every wheel the project needs (for machines without a package index)
WHEELHOUSE ?= wheelhouse

.PHONY: demo test smoke dry-run doctor preflight test-slurm clean-demo wheelhouse install-offline docs format

# what the pipeline needs (the demo's install); the tests' own needs come on top (`.dev`).
# envs/install-venv installs with uv from pip's settings (pip where uv cannot be had: DMLBENCH_INSTALLER=pip)
$(VENV)/.installed: pyproject.toml envs/install-venv
	@started=$$(date +%s) && envs/install-venv $(VENV) -e '.[tensorboard]' \
	  && python -m dmlbench.orchestration.bytecode \
	  && echo "install: $$(( $$(date +%s) - started )) s"
	touch $@

$(VENV)/.dev: $(VENV)/.installed
	envs/install-venv $(VENV) -e '.[dev]'
	touch $@

demo: $(VENV)/.installed  ## fixtures of the four datasets + digits, every rule, on CPU
	@started=$$(date +%s); python -m snakemake --cores $(CORES) --config preset=demo \
	  && echo "pipeline: $$(( $$(date +%s) - started )) s"
	@echo "Report: reports/demo/index.html"

test: $(VENV)/.dev  ## unit tests + the smoke preset through the real Snakemake DAG + a bounded preflight
	python -m pytest -n $(TEST_WORKERS) --dist loadgroup

format: $(VENV)/.dev  ## write the code as ruff formats it and lint it (tests/test_lint.py checks both)
	python -m ruff format dmlbench tests benchmarks
	python -m ruff check dmlbench tests benchmarks

smoke: $(VENV)/.installed
	python -m snakemake --cores $(CORES) --config preset=smoke

test-slurm: $(VENV)/.dev  ## the smoke preset on a real one-node SLURM started here (root, Debian)
	python tests/slurm_cluster.py --config preset=smoke
	python tests/slurm_cluster.py --accounting --config preset=smoke

doctor: $(VENV)/.installed  ## what this machine has and lacks for the full preset (under a minute)
	python -m dmlbench doctor

preflight: $(VENV)/.installed  ## every code path of the full preset run once on fixtures + its compute budget
	python -m dmlbench preflight $(if $(PREFLIGHT_SIDE),--image-side $(PREFLIGHT_SIDE))

dry-run: $(VENV)/.installed  ## the full preset's jobs, as a GPU box would run them
	python -m snakemake -n --cores all --resources gpu=8

docs: $(VENV)/.dev  ## the documentation site (site/index.html): generated pages, then mkdocs --strict
	python -m dmlbench.report.docs_pages docs/generated
	NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict --quiet
	@echo "Documentation: site/index.html"

wheelhouse: $(VENV)/.dev  ## every wheel of the project and its needs, at this environment's versions
	$(VENV)/bin/python -m pip freeze --exclude-editable > $(VENV)/versions.txt
	$(VENV)/bin/python -m pip wheel --quiet --wheel-dir '$(WHEELHOUSE)' --constraint $(VENV)/versions.txt '.[dev]'
	@echo "$(WHEELHOUSE)/: $$(ls '$(WHEELHOUSE)' | wc -l) wheels for $$($(VENV)/bin/python -c 'import platform; print("Python", platform.python_version(), platform.system(), platform.machine())')."
	@echo "Copy it with this checkout; there: make install-offline WHEELHOUSE=<folder>"

install-offline:  ## .venv from the wheels of `make wheelhouse`, no package index
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --no-index --find-links '$(WHEELHOUSE)' 'dmlbench[dev]'
	touch $(VENV)/.installed $(VENV)/.dev

clean-demo:
	rm -rf results/demo results/smoke reports/demo reports/smoke data/fixture
