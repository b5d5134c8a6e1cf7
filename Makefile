# The two commands a new user needs: `make run` and `make test`. Everything else is for developers.
# Every install goes through constraints.txt, the versions the test suite passed with, so a machine set
# up next month gets the same set; `make lock` refreshes it.
.DEFAULT_GOAL := run
.PHONY: run test lint format typecheck bench fuzz lock demo clean

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LOCK := constraints.txt
# -qq: no pip chatter and no setuptools notice about editable installs on a new user's first screen
# (errors still print). The lock also pins the build backend of the editable install.
PIP := $(BIN)/python -m pip --disable-pip-version-check
PIP_INSTALL := $(PIP) install -qq --constraint $(LOCK) --build-constraint $(LOCK)

$(BIN)/python:
	@echo "Creating $(VENV) and installing the pinned versions of $(LOCK) (a few minutes, once)..."
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) install -qq --constraint $(LOCK) pip

$(VENV)/.installed: pyproject.toml $(LOCK) | $(BIN)/python
	@$(PIP_INSTALL) -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(LOCK) | $(BIN)/python
	@$(PIP_INSTALL) -e ".[test]"
	@# irrCAC, a reference of the statistics tests: its metadata pins pandas<3 and scipy==1.12.0,
	@# which its code does not need, so it goes in without its dependencies (pinned in $(LOCK))
	@$(PIP_INSTALL) --no-deps irrCAC
	@touch $@ $(VENV)/.installed

## run: create the virtual environment, install, and start the dashboard on the embedded demo database
run: $(VENV)/.installed
	@$(BIN)/evalcore serve

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

## fuzz: every parser and import path (the loaders of each format, uploads, the reply parser, batch
## and vLLM output, project archives, templates) against FUZZ_EXAMPLES generated cases each; any
## error that is not an EvalcoreError, and any case running past 30 s of processor time, fails.
## Four groups, one pytest each, each printing its tally of outcomes (docs/reliability.md); `make
## -j4 fuzz` runs them side by side. `make test` runs the same tests with a few cases each.
FUZZ_EXAMPLES ?= 10000
FUZZ_GROUPS := fuzz-archives fuzz-judge fuzz-loaders fuzz-templates
.PHONY: $(FUZZ_GROUPS)
fuzz: $(FUZZ_GROUPS)

$(FUZZ_GROUPS): fuzz-%: $(VENV)/.installed-test
	EVALCORE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/fuzz/test_fuzz_$*.py -q -p no:cacheprovider -o timeout=0

## lock: resolve the newest versions pyproject.toml allows in a scratch environment and pin them in
## constraints.txt; run `make test` afterwards, and commit the file once the suite passes
lock:
	rm -rf $(VENV)-lock
	$(PYTHON) -m venv $(VENV)-lock
	$(VENV)-lock/bin/python -m pip install -qq --disable-pip-version-check --upgrade pip setuptools wheel
	$(VENV)-lock/bin/python -m pip install -qq --disable-pip-version-check -e ".[test]"
	$(VENV)-lock/bin/python -m pip install -qq --disable-pip-version-check --no-deps irrCAC
	{ grep '^#' $(LOCK); $(VENV)-lock/bin/python -m pip freeze --all --exclude-editable; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)
	rm -rf $(VENV)-lock
	@echo "$(LOCK) refreshed; now run: make test"

## bench: the benchmarks of docs/benchmarks.md (the issue-9 targets first; about 20 minutes in all)
bench: $(VENV)/.installed-test
	$(BIN)/python bench/cli_start.py
	$(BIN)/python bench/calibrate_cli.py
	$(BIN)/python bench/judge_cli.py
	$(BIN)/python bench/metrics.py
	$(BIN)/python bench/store.py
	$(BIN)/python bench/judge.py
	$(BIN)/python bench/report.py
	$(BIN)/python bench/annotate.py
	$(BIN)/python bench/calibrate_page.py
	$(BIN)/python bench/signin.py

clean:
	rm -rf $(VENV) $(VENV)-lock .pytest_cache .ruff_cache .mypy_cache
