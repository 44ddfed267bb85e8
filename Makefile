# Two commands on a fresh machine with Python 3.11 and make: `make demo`, `make test`.
# Each creates .venv (and reinstalls when pyproject.toml changes).

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.bench-installed

.PHONY: demo test fast slow lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/jobtrail demo

test: lint typecheck
	$(BIN)/pytest

# The suite in two halves that together are `pytest` (CI runs them as separate steps):
# `fast` is everything not marked `slow`, for the loop while working, on FAST_WORKERS
# processes (pytest-xdist); `slow` the tests that wait on real time or real processes (crash
# runs, partitions, clock skew, Airflow, ...) on SLOW_WORKERS, which overlaps their waits.
# Both are safe in parallel: every test has its own tmp_path, SQLite file, PostgreSQL schema,
# faketime file and port 0; partition labs draw their networks from the worker's own share
# (tests/netns.py); the bench peers' fixed databases are in one module, run in one worker.
# (test_crash_many once ended `succeeded` on two workers: its check was wrong, not the
# parallelism; tests/integration/test_violation_unseen.py drives that interleaving.)
# SLOW_WORKERS=0 runs the slow tests in one process.
FAST_WORKERS ?= 2
SLOW_WORKERS ?= 2

fast: $(STAMP)
	$(BIN)/pytest -m "not slow" -n $(FAST_WORKERS) --dist loadscope

slow: $(STAMP)
	$(BIN)/pytest -m slow -n $(SLOW_WORKERS) --dist loadscope

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/python .ci/changelog.py

typecheck: $(STAMP)
	$(BIN)/mypy --strict
	$(BIN)/mypy --strict tests/typing
	$(BIN)/pyright

unit: $(STAMP)
	$(BIN)/pytest tests/unit

# The benchmarks also run a peer (DBOS Transact), installed only for them: the `bench` extra.
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
