import pytest

from gitgate.errors import ToolMissing
from gitgate.render import tools


def test_a_missing_helm_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("GITGATE_HELM", str(tmp_path / "no-such-helm"))
    with pytest.raises(ToolMissing) as raised:
        tools.find_helm()
    assert "make setup" in raised.value.message and "GITGATE_HELM" in raised.value.message
