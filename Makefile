# Each target first installs what it needs into .venv (again when pyproject.toml changes).
# The very first install builds llama.cpp (15-20 min on 2 cores) and downloads model weights.

.PHONY: run test bench chromium postgresql

# The main job: analyse the bundled sales data with the embedded model (no server, no key, no
# network): a chart and a table, written beside the run's trajectory.
QUESTION ?= get revenue totals by region and product type over time
run: .venv/.installed-run
	.venv/bin/agentrt run "$(QUESTION)"

# Every check: lint, format, types (strict on agentrt/), dependency layers (pyproject.toml's
# [tool.importlinter]), the API reference built with warnings as errors (mkdocs.yml; into the
# ignored site/), tests (a real model among them) on two cores, as CI has.
test: .venv/.installed-dev chromium postgresql
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	.venv/bin/lint-imports
	.venv/bin/mkdocs build --strict
	.venv/bin/pytest -n 2

bench: .venv/.installed-dev
	.venv/bin/python benchmarks/overhead.py
	.venv/bin/python benchmarks/retrieval.py
	.venv/bin/python benchmarks/peers.py
	.venv/bin/python benchmarks/faults.py

# The server's web page is tested in Debian's Chromium, driven by Playwright (which cannot
# download a browser of its own here). Installed once; as root, or with sudo.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
chromium:
	command -v chromium >/dev/null || ($(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y chromium)

# The session store's tests run a real PostgreSQL server (tests/postgres.py: initdb in a temporary
# folder, a loopback port). Debian's server package, installed once; as root, or with sudo.
postgresql:
	command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ($(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y postgresql)

.venv/.installed-run: pyproject.toml scripts/install
	scripts/install local,model-default,retrieval,analysis
	touch $@

.venv/.installed-dev: pyproject.toml scripts/install
	scripts/install dev
	touch $@
