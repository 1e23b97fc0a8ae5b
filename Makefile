# dsh — two commands do everything on a fresh machine with only Python 3.11:
#   make run    replay a bundled recorded scenario keylessly, then show the session tree
#   make test   lint, type check, import contracts and the whole test suite
#   make test-quick   lint and the tests not marked slow or postgres (see below)
#   make docs   the documentation site, built offline into site/ (mkdocs.yml)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
QUICK ?=
# Python's bytecode cache stays on for everything make runs: an environment that sets
# PYTHONDONTWRITEBYTECODE (this machine's does) makes each of the suite's ~2,000 Python processes compile
# every module it imports from source, and pytest re-runs its assertion rewrite of every dsh
# module (dsh's pytest plugins mark the package) in each process.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-quick lint typecheck contracts browser pytest sandbox-deps bench scenarios docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -U pip

$(STAMP): $(BIN)/python pyproject.toml
	@rm -rf src/dsh.egg-info  # metadata of the distribution's old name (dsh), see docs/decisions
	$(BIN)/python -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# The demo writes to a store of its own (never the user's): DEMO_STORE=... to put it elsewhere.
DEMO_STORE ?= sqlite:$(CURDIR)/.demo/sessions.db

run: $(STAMP)
	@echo "make run: replaying into the demo store $(DEMO_STORE)"
	$(BIN)/dsh demo --store '$(DEMO_STORE)'
	@echo "make run: read it with  $(BIN)/dsh sessions list --store '$(DEMO_STORE)'"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

# bash's sandbox (workspace-write / read-only) needs bubblewrap; never fails the build: without
# it the confinement tests skip and say why.
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || (apt-get update -q && apt-get install -y -q -o DPkg::Lock::Timeout=120 bubblewrap) >/dev/null 2>&1 || echo "bubblewrap could not be installed: the sandbox confinement tests will skip"

# Three workers on two cores: docs/decisions/2026-12-01-parallel-tests.md (update 2026-12-07).
pytest: $(STAMP) sandbox-deps
	$(BIN)/pytest -q -p no:cacheprovider -n 3 --dist loadfile --durations=15

# The browser tests drive Debian's chromium; install it when missing (as root, with apt-get).
# Never fails: without it the browser tests skip and say why.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=120 chromium) >/dev/null 2>&1 \
	      || echo "make: could not install chromium with apt-get; the browser tests will skip"; \
	  else \
	    echo "make: no /usr/bin/chromium and no apt-get as root; the browser tests will skip"; \
	  fi; \
	fi

test: lint typecheck contracts browser pytest

# A quick subset while working, not a substitute for `make test` (which CI runs): ruff and
# the tests that are neither `slow` nor `postgres`. It leaves out (tests/conftest.py SLOW):
# the Temporal tests, the 32 ACP servers replaying the original's recordings, the chromium
# tests, `make run`, the tests that run pytest in a subprocess, and every PostgreSQL test;
# no mypy, no import contracts, no chromium or bubblewrap install.
test-quick: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools
	$(BIN)/pytest -q -p no:cacheprovider -n 3 --dist loadfile -m "not slow and not postgres"

bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	$(BIN)/python bench/run.py $(if $(QUICK),--quick,)

# The documentation site: docs/reference/cli/ regenerated from dsh's --help, then a strict build
# (a broken link or anchor fails) into site/. Offline: the docs extra comes with dev (the stamp),
# and the build fetches nothing. Open site/index.html.
docs: $(STAMP)
	$(BIN)/python tools/gen_cli_docs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

# Re-record the bundled scenarios with our record mode against the local test server.
scenarios: $(STAMP)
	$(BIN)/python -m tests.scenario_recipes

clean:
	rm -rf $(VENV) build site *.egg-info src/*.egg-info
