# The README's two commands: `make demo` and `make test`. Both set up .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gitgate-setup
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml tools/install_tools.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	$(BIN)/python tools/install_tools.py --bin $(BIN)
	touch $(STAMP)

demo: setup
	$(BIN)/gitgate plan examples/repo

test: setup
	$(BIN)/ruff check gitgate tests bench tools
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check gitgate tests bench tools
	$(BIN)/mypy

bench: setup
	$(BIN)/python bench/render_bench.py
	$(BIN)/python bench/apply_bench.py

clean:
	rm -rf $(VENV)
