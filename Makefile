# TopoRAG: the two commands are `make reproduce` and `make test` (both set up the environment first).
PYTHON   ?= python3
VENV     ?= .venv
PROFILE  ?= cpu-quick
PREPROCESS ?=
PY       := $(VENV)/bin/python
PIP      := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt
STAMP    := $(VENV)/.setup-done

.PHONY: setup test test-all chromium reproduce lab bench gpu-check clean-venv

setup: $(STAMP)

# Re-runs only when a requirements file changes: a second `make setup` takes well under a second.
$(STAMP): requirements.txt requirements-nodeps.txt constraints.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements.txt
	$(PIP) --no-deps -r requirements-nodeps.txt
	$(PIP) --no-deps --no-build-isolation -e .
	@touch $@
	@echo "environment ready in $(VENV)"

test: setup
	$(PY) -m pytest

# Also runs the tests that load the bundled real models (slower; still offline) and the browser test.
test-all: setup chromium
	$(PY) -m pytest -m ""

# Headless Chromium for the browser test (`pytest -m browser`): Debian's package, installed only when missing (as
# root, as on CI and the project's machines; otherwise it says what to run).
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "the browser test needs Chromium: sudo apt-get install chromium" >&2; exit 1; fi; }

# PREPROCESS=dask (a LocalCluster) or PREPROCESS=tcp://host:8786: the training runs preprocess on Dask.
reproduce: setup
	TOPORAG_PREPROCESS=$(PREPROCESS) $(PY) -m toporag_lib.study.reproduce --profile $(PROFILE)

# JupyterLab refuses to run as root unless told (containers and CI machines often are root).
lab: setup
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# Each benchmark prints ratios against a reference measured in the same run; one core for stable numbers.
bench: setup
	@for script in benchmarks/bench_*.py; do echo "== $$script"; taskset -c 0 $(PY) $$script || exit 1; done

# On a CUDA machine: the CUDA-marked tests and TopoRAG vs G-Retriever train steps with a Llama-2-7B-shaped LLM.
gpu-check: setup
	PY=$(PY) bash benchmarks/gpu_check.sh

clean-venv:
	rm -rf $(VENV)
