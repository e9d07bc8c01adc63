# memadmin: `make run` starts everything on the embedded default, `make test` runs the tests.
SHELL := /bin/bash
VENV ?= .venv
NEW_ENOUGH := -c 'import sys; sys.exit(sys.version_info < (3, 12))'
# The first Python >= 3.12 on PATH (pyenv users: .python-version asks for 3.13).
PYTHON ?= $(shell for p in python3.13 python3.12 python3.14 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p $(NEW_ENOUGH) >/dev/null 2>&1 && { echo $$p; break; }; done)
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test lint format setup venv bench clean reliability docs

# $(VENV) on a Python new enough for Django 6. A venv left on an older one (say by
# PYTHON=python3.11 make run) is rebuilt, not reused: it could never install memadmin.
venv:
	@if [ -z "$(PYTHON)" ]; then echo "memadmin needs Python 3.12 or newer (Django 6); none found on PATH." >&2; exit 1; fi
	@if ! $(PYTHON) $(NEW_ENOUGH) >/dev/null 2>&1; then \
		echo "memadmin needs Python 3.12 or newer (Django 6); PYTHON=$(PYTHON) is $$($(PYTHON) --version 2>&1)." >&2; exit 1; fi
	@if [ -e "$(VENV)" ] && ! "$(VENV)/bin/python" $(NEW_ENOUGH) >/dev/null 2>&1; then \
		if [ ! -f "$(VENV)/pyvenv.cfg" ]; then echo "$(VENV) exists but is not a virtualenv; remove it or set VENV=another/path." >&2; exit 1; fi; \
		echo "$(VENV) has $$("$(VENV)/bin/python" --version 2>/dev/null || echo 'a Python that no longer runs'), too old for memadmin (3.12 or newer): rebuilding it with $$($(PYTHON) --version)."; \
		rm -rf "$(VENV)"; \
	fi
	@if [ ! -x "$(VENV)/bin/python" ]; then echo "Creating $(VENV) with $$($(PYTHON) --version)"; $(PYTHON) -m venv "$(VENV)"; fi

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory venv
	@echo "Installing memadmin into $(VENV)"
	@$(VENV)/bin/python -m pip install -q --upgrade pip
	@$(VENV)/bin/python -m pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/python manage.py start

test: $(STAMP)
	SECRET_KEY="$${SECRET_KEY:-$$($(VENV)/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))')}" \
		$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

# The long fault loop: kill -9 the sweep's worker 20 times (CI runs 3). Needs PostgreSQL +
# Redis for the production shape, e.g. DATABASE_URL=... CELERY_BROKER_URL=... make reliability
reliability: $(STAMP)
	MEMADMIN_KILL_LOOPS=$${MEMADMIN_KILL_LOOPS:-20} \
	SECRET_KEY="$${SECRET_KEY:-$$($(VENV)/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))')}" \
		$(VENV)/bin/python -m pytest tests/reliability/test_processes.py -s -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Benchmarks on a dedicated PostgreSQL database (created and dropped by the command):
# make bench BENCH_ARGS="--size full"   (see docs/performance.md)
bench: $(STAMP)
	$(VENV)/bin/python -m bench $(BENCH_ARGS)

# The reference in docs/ as a browsable site in site/ (MkDocs with Material). --strict
# fails on a broken link or anchor; open site/index.html, or serve it with
# .venv/bin/python -m mkdocs serve
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/python -m mkdocs build --strict --site-dir site

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) var staticfiles site
