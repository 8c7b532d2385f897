"""Hostile repos: a repo folder with a chart, rendering and running gitgate on it, and the checks
that nothing escaped (no file outside the repo, one broken source among good ones)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, write_files
from tests.hostile.conftest import OUTSIDE

CHART = {"Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
         "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}

SECRET = "hunter2-super-secret-value"
GOOD = {"good/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: "
                        "default}\ndata: {ok: 'yes'}\n"}
LIMITS = {"GITGATE_RENDER_TIMEOUT": "10", "GITGATE_RENDER_MAX_OUTPUT": str(2 << 20),
          "GITGATE_YAML_MAX_NODES": "200000"}


def growing_template(doublings: int) -> str:
    """A template whose string doubles `doublings` times from 100 bytes: past any memory cap
    from about 22 on."""
    return ('{{- $s := "' + "x" * 100 + '" }}{{- range until ' + str(doublings) + ' }}'
            '{{- $s = printf "%s%s" $s $s }}{{- end }}apiVersion: v1\nkind: ConfigMap\n'
            'metadata: {name: c}\ndata: {n: {{ len $s | quote }}}\n')


def chart(folder: str, **files: str) -> dict[str, str]:
    return {f"{folder}/{k}": v for k, v in {**CHART, **files}.items()}


def gitgate(*argv: str, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **LIMITS, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO_ROOT, env=env)


def render(root: Path) -> tuple[subprocess.CompletedProcess, dict]:
    result = gitgate("render", str(root), "-o", "json")
    assert result.returncode in (0, 1), result.stderr[-2000:]  # never a crash or a signal
    return result, json.loads(result.stdout)


def rendered_names(document: dict) -> set[str]:
    return {o["metadata"]["name"] for b in document["bundles"] for o in b["objects"]}


def assert_clean(*texts: str) -> None:
    for text in texts:
        assert OUTSIDE not in text and SECRET not in text
        assert "Traceback" not in text


def assert_one_broken(root: Path, file: str, *words: str) -> dict:
    """The named file is blamed (with `words`), the good source still renders, nothing leaks,
    and check's JUnit and plan say the same without leaking either."""
    result, document = render(root)
    assert result.returncode == 1
    assert "good" in rendered_names(document)
    errors = [e for e in document["errors"] if (e["file"] or "") == file.rstrip("/")
              or (e["file"] or "").startswith(file)]
    assert errors, document["errors"]
    for word in words:
        assert any(word in e["message"] for e in errors), errors
    junit = root.parent / f"{root.name}-junit.xml"
    check = gitgate("check", str(root), "--junit", str(junit))
    plan = gitgate("plan", str(root), "-o", "json")
    assert check.returncode == 1 and plan.returncode in (0, 1)
    assert_clean(result.stdout, result.stderr, check.stdout, check.stderr, junit.read_text(),
                 plan.stdout, plan.stderr)
    return document


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_files(tmp_path / "repo", {"gitgate.yaml": "paths: [.]\n", **GOOD, **files})
