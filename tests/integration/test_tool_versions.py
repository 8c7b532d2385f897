"""The tools' versions, read from the binaries themselves: `find_kustomize`/`find_helm` run
what they are given (a flag beats the environment; a too old kustomize is refused) and
`gitgate version` prints what it found, a missing tool included."""

from __future__ import annotations

import json

import pytest

from gitgate import __version__
from gitgate.cli import main
from gitgate.errors import ToolMissing
from gitgate.render import tools

pytestmark = pytest.mark.integration


def test_a_too_old_kustomize_is_refused_with_the_version(monkeypatch, tmp_path):
    fake = tmp_path / "kustomize"
    fake.write_text("#!/bin/sh\necho v4.5.7\n")
    fake.chmod(0o755)
    with pytest.raises(ToolMissing) as raised:
        tools.find_kustomize(str(fake))
    assert "v4.5.7" in raised.value.message and "v5" in raised.value.message


def test_flag_beats_environment(monkeypatch, tmp_path):
    fake = tmp_path / "helm"
    fake.write_text("#!/bin/sh\necho v3.15.2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("GITGATE_HELM", str(tmp_path / "elsewhere"))
    assert tools.find_helm(str(fake)) == (str(fake), "v3.15.2")


def test_version_command_and_flag(capsys):
    assert main(["version", "-o", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["gitgate"] == __version__
    assert found["helm"].startswith("v") and found["kustomize"].startswith("v")
    assert found["python"].startswith("3.")
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"gitgate: {__version__}\nhelm: v")


def test_a_missing_tool_is_reported_not_raised(capsys):
    assert main(["version", "--helm", "/nonexistent/helm"]) == 0
    assert "helm: not found" in capsys.readouterr().out
