# lb-reconciler developer entry points. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help venv tools tools-path demo test test-unit lint format clean

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

tools-path: ## print the folder holding the built tools (use with make -s)
	@bash tools/build.sh --path

demo: $(STAMP) tools ## run the local demo (emulated OpenStack, local kube-apiserver)
	$(BIN)/lb-reconciler demo

test: $(STAMP) tools ## run every test (unit, integration with the real engine, e2e)
	$(BIN)/pytest -q

test-unit: $(STAMP) ## run only the pure unit tests
	$(BIN)/pytest -q tests/unit

lint: $(STAMP) ## ruff, ruff format --check, mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP) ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean: ## remove the venv and caches (not the toolchain cache)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache *.egg-info
