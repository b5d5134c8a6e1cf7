# The two commands a new user needs: `make run` and `make test`. Everything else is for developers.
.DEFAULT_GOAL := run
.PHONY: run test lint format typecheck bench demo clean

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@touch $@ $(VENV)/.installed

## run: create the virtual environment, install, and start the dashboard on the embedded demo database
run: $(VENV)/.installed
	$(BIN)/python -m ui.serve

## test: install the test dependencies and run the whole suite
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

bench: $(VENV)/.installed-test
	$(BIN)/python bench/metrics.py
	$(BIN)/python bench/store.py
	$(BIN)/python bench/judge.py
	$(BIN)/python bench/report.py
	$(BIN)/python bench/annotate.py
	$(BIN)/python bench/calibrate_page.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
