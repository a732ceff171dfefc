# lb-reconciler developer entry points. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers for make test: on 2 cores, four left the machine idle for a fifth of the
# run (while three of them waited on leases, Octavia-like delays, backoff); five keep it busy
# (15 min 30 s against 14 min 7 s in the same order): docs/testing.md has the figures
TEST_WORKERS ?= 5
# a random order each run (pytest-randomly), its seed on the command line make prints, so a
# failure's order can be repeated: TEST_SEED=N make test; TEST_SEED=none runs in file order
TEST_SEED ?=
ifeq ($(TEST_SEED),)
TEST_SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
ORDER := $(if $(filter none,$(TEST_SEED)),-p no:randomly,-p randomly --randomly-seed=$(TEST_SEED))
PYTEST_ARGS ?=
PYTEST := $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup $(ORDER) $(PYTEST_ARGS)

.PHONY: help venv tools tools-test tools-path demo image lock manifests test test-fast test-unit lint format clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

venv: $(STAMP) ## create .venv with the package and dev tools

tools: ## build (or reuse) pulumi, the OpenStack plugin, etcd, kube-apiserver, kubectl
	@bash tools/build.sh

tools-test: ## the same, MinIO (the s3:// backend's tests), helm (the chart's) and promtool (its alerts')
	@bash tools/build.sh --with-minio --with-helm --with-promtool

tools-path: ## print the folder holding the built tools (use with make -s)
	@bash tools/build.sh --path

demo: $(STAMP) tools ## run the local demo (emulated OpenStack, local kube-apiserver)
	$(BIN)/lb-reconciler demo

image: $(STAMP) ## build the container image with podman: localhost/lb-reconciler:<version> and :dev
	@bash image/build.sh

manifests: tools-test ## render deploy/ from the Helm chart (charts/lb-reconciler)
	@HELM="$$(bash tools/build.sh --with-minio --with-helm --path)/helm" bash deploy/render.sh

lock: $(STAMP) ## pin the image's Python dependencies, with hashes, in image/requirements.txt
	$(BIN)/uv pip compile pyproject.toml --generate-hashes --universal --python-version 3.11 \
	  --excludes image/excludes.txt --no-header --quiet -o image/requirements.txt

test: $(STAMP) tools-test image ## run every test (unit, integration, e2e, the image) on TEST_WORKERS workers, in a random order
	$(PYTEST)

test-fast: $(STAMP) tools-test ## the edit loop: every test not marked slow that needs no kube-apiserver
	$(PYTEST) -m "not kube and not slow"

test-unit: $(STAMP) ## run only the pure unit tests
	$(BIN)/pytest -q tests/unit

.PHONY: conformance
conformance: $(STAMP) ## Octavia's API suite against the emulator, table in docs/conformance.md (CONFORMANCE_ARGS="--mode none --module pool")
	$(BIN)/python -m conformance $(CONFORMANCE_ARGS)

lint: $(STAMP) ## ruff, ruff format --check, mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP) ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean: ## remove the venv and caches (not the toolchain cache)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info
