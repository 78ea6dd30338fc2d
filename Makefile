# hubwatch: `make run` starts the daemon on its embedded default (SQLite, the repos in
# config.toml); `make test` runs lint, layering, types and the whole test suite. Both
# bootstrap .venv from PyPI on a fresh machine.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2

.PHONY: run test lint test-only demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/hubwatch --config config.toml run

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

test-only: $(STAMP)
	HF_HUB_DISABLE_TELEMETRY=1 $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile

test: lint test-only

demo: $(STAMP)
	$(VENV)/bin/python demo/run_demo.py

bench: $(STAMP)
	$(PY) benchmarks/planner.py
	$(PY) benchmarks/poll_cost.py
	$(PY) benchmarks/scale.py
	$(PY) benchmarks/api.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
