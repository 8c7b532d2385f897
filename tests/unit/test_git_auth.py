import base64

import pytest

from gitgate.errors import SourceError
from gitgate.source.git import GitAuth, redact


def test_token_reaches_git_only_through_its_environment(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("ghp_supersecret\n")
    auth = GitAuth.from_settings(token_file=str(token_file))
    env = auth.env()
    header = env["GIT_CONFIG_VALUE_0"]
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert base64.b64decode(header.split()[-1]).decode() == "x-access-token:ghp_supersecret"
    assert "ghp_supersecret" not in redact(f"failed: {header} ghp_supersecret", auth.secrets())


def test_ssh_key_needs_known_hosts_and_checks_host_keys(tmp_path):
    with pytest.raises(SourceError, match="known-hosts"):
        GitAuth.from_settings(ssh_key=str(tmp_path / "id"))
    auth = GitAuth.from_settings(ssh_key="/k/id", known_hosts="/k/known_hosts")
    command = auth.env()["GIT_SSH_COMMAND"]
    assert "StrictHostKeyChecking=yes" in command and "UserKnownHostsFile=/k/known_hosts" in command
