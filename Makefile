# The README's two commands: `make demo` and `make test`. Both set up .venv when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gitgate-setup
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup demo test test-fast docs e2e lint bench bench-shards bench-freeze clean

setup: $(STAMP)

$(STAMP): pyproject.toml tools/install_tools.py tools/install_promtool.py tools/install_chromium.py tools/install_registry.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	$(BIN)/python tools/install_tools.py --bin $(BIN)
	$(BIN)/python tools/install_promtool.py --bin $(BIN)
	$(BIN)/python tools/install_chromium.py
	$(BIN)/python tools/install_registry.py --bin $(BIN)
	touch $(STAMP)

# plan and render examples/repo, its published chart fetched from examples/charts, which
# tools/demo.py serves on 127.0.0.1:8879 meanwhile (no cluster, nothing beyond this machine)
demo: setup
	$(BIN)/python tools/demo.py

test: setup docs
	$(BIN)/ruff check gitgate tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -rs

# The edit loop: the unit tests only (no socket, no process, no tool), in parallel. `make test`
# stays the whole suite.
test-fast: setup
	$(BIN)/python -m pytest -q -n auto tests/unit

# The documentation site (mkdocs.yml) into site/, git-ignored; any warning fails the build.
docs: setup
	$(BIN)/mkdocs build --strict --quiet

# End-to-end against a real Karmada (../shared/karmada-harness): GITGATE_E2E_KARMADA names the
# harness's state folder. Without it every e2e test is skipped, saying why.
e2e: setup
	$(BIN)/python -m pytest -v -rs tests/e2e

lint: setup
	$(BIN)/ruff check gitgate tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

bench: setup
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# 1 vs 2 `gitgate run --shard` replicas (bench/shards.py): cold apply, a change, a no-op pass,
# each replica's share and peak RSS, and the takeover after a SIGKILL
bench-shards: setup
	$(BIN)/python bench/shards.py $(BENCH_ARGS)

# A hold gate pushed while `gitgate run` writes its cold pass (bench/freeze_mid_pass.py): how
# soon the covered writes stop, and that the others go on (1,000 and 5,000 bundles)
bench-freeze: setup
	$(BIN)/python bench/freeze_mid_pass.py --json bench/results/freeze-mid-pass-emulator.json \
		$(BENCH_ARGS)

clean:
	rm -rf $(VENV)
