import pytest

from gitgate.errors import ToolMissing
from gitgate.render import tools


def test_a_missing_helm_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("GITGATE_HELM", str(tmp_path / "no-such-helm"))
    with pytest.raises(ToolMissing) as raised:
        tools.find_helm()
    assert "make setup" in raised.value.message and "GITGATE_HELM" in raised.value.message


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
