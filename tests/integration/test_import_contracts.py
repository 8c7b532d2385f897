"""The import contracts in pyproject.toml ([tool.importlinter]) hold for gitgate, and a
deliberate bad import in a copy of the package breaks the contract it should."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, text=True,
                          capture_output=True, timeout=120)


def copy_with(tmp_path: Path, module: str, line: str) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(REPO_ROOT / "gitgate", root / "gitgate",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    target = root / module
    target.write_text(target.read_text() + f"\n{line}\n")
    return root


def test_the_contracts_hold_for_gitgate():
    done = lint_imports(REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    ("gitgate/bundle/group.py", "from gitgate.apply import engine  # noqa",
     "Layers: a module imports only the layers below it"),
    ("gitgate/loop/reconciler.py", "from gitgate.output import console  # noqa",
     "Layers: a module imports only the layers below it"),
    ("gitgate/plan.py", "from kubernetes import client  # noqa",
     "Only the adapter's transport and lease import kubernetes"),
    ("gitgate/gate/windows.py", "import subprocess  # noqa",
     "Pure stages reach no process, Git, network or cluster, not even indirectly"),
    ("gitgate/model/paths.py", "from gitgate.apiserver import verbs  # noqa",
     "Pure stages reach no process, Git, network or cluster, not even indirectly"),
    ("gitgate/cli/info.py", "from gitgate.apply import engine  # noqa",
     "The CLI runs passes through the pass module, never the apply internals"),
    ("gitgate/apiserver/verbs.py", "import urllib3  # noqa",
     "Only the adapter's exchange and transport speak HTTP (urllib3)"),
    ("gitgate/apply/pruning.py", "from gitgate.apply import ledger  # noqa",
     "The pass engine never imports the record store"),
    ("gitgate/apply/recordformat.py", "from gitgate.apply import prunedecision  # noqa",
     "The record store never imports the pass engine"),
    ("gitgate/apiserver/verbs.py", "from gitgate import yamlio  # noqa",
     "The API adapter imports only the model and the errors of gitgate"),
    ("gitgate/status/overview.py", "from gitgate.loop import schedule  # noqa",
     "The views never import the loop"),
    ("gitgate/output/webui.py", "from gitgate.loop import reconciler  # noqa",
     "The views never import the loop"),
    ("gitgate/output/statusviews.py", "from gitgate.loop.snapshot import published  # noqa",
     "The views never import the loop"),
])
def test_a_bad_import_breaks_its_contract(tmp_path, module, line, broken):
    done = lint_imports(copy_with(tmp_path, module, line))
    assert done.returncode != 0
    assert f"{broken} BROKEN" in done.stdout, done.stdout
