# Every target first installs what it needs into .venv (once; again when pyproject.toml changes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test bench

# The main job: answer a question on the embedded defaults (no server, no key, no network).
run: $(VENV)/.installed
	$(BIN)/agentrt run

# Every check: lint, format, types (strict on agentrt/), tests.
test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/overhead.py

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@
