# `make demo` and `make test` work on a fresh machine: each creates .venv and installs the
# project into it on first use (re-installs when pyproject.toml changes).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR ?= runs/demo

.PHONY: install demo test test-all lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) scripts/train_gan.py --config configs/digits.yaml --output_dir $(DEMO_DIR) --overwrite_output_dir
	@echo "Sample grids: $(DEMO_DIR)/samples/  (final EMA generator: $(DEMO_DIR)/generator/)"

# One worker per core (pytest-xdist), each on one thread (tests/conftest.py); --dist loadfile keeps a
# file's tests, and so its module fixtures (the tiny runs they share), in one worker. `make test XDIST=`: one process.
XDIST := -n 2 --dist loadfile

test: $(STAMP)
	$(PY) -m pytest -q $(XDIST)

test-all: $(STAMP)
	$(PY) -m pytest -q -m '' $(XDIST)

# One code style (pyproject.toml [tool.ruff]): lint rules, then formatting, checked, never rewritten here.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf runs .pytest_cache
