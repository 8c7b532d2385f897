"""What a user sees when the API server refuses gitgate or cannot be reached: one line naming
the cause (and the server, verb or resource), the exit code, and no traceback, urllib3
warning, retry line or token. Emulator only: a real cluster cannot be told to misbehave."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.kubeapi.server import KubeApiEmulator
from tests.support.shoprepo import shop_repo

pytestmark = pytest.mark.integration

TOKEN = "test-token-not-secret"


def gitgate(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "default"}  # a warning would show, if one were sent
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO_ROOT, env=env)


def assert_one_clean_line(result: subprocess.CompletedProcess, *expected: str) -> None:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    for noise in ("Traceback", "Warning", "Retrying", "MaxRetryError", TOKEN):
        assert noise not in result.stderr + result.stdout


@pytest.fixture
def emulator(tmp_path):
    with KubeApiEmulator() as api:
        api.kubeconfig = str(api.write_kubeconfig(tmp_path / "kubeconfig"))
        yield api


@pytest.fixture
def repo(tmp_path):
    return shop_repo(tmp_path / "repo")


def test_a_wrong_token_is_unauthorized_not_a_missing_crd(emulator, repo):
    emulator.state.accepted_tokens = {"the-token-the-server-wants"}
    for argv in (["status"], ["apply", str(repo)]):
        result = gitgate(*argv, "--kubeconfig", emulator.kubeconfig)
        assert result.returncode == 2, result.stderr
        assert_one_clean_line(result, "error: unauthorized (check the token in KUBECONFIG")
        assert "CRD" not in result.stderr


def test_forbidden_names_the_verb_and_the_resource(emulator, repo):
    emulator.state.denied = {("list", "configmaps")}
    result = gitgate("status", "--kubeconfig", emulator.kubeconfig)
    assert result.returncode == 2
    assert_one_clean_line(result, "error: forbidden: list configmaps in namespace gitgate-system")

    emulator.state.denied = {("patch", "services")}
    result = gitgate("apply", str(repo), "--kubeconfig", emulator.kubeconfig, "-o", "json")
    assert result.returncode == 1  # the pass ran; the bundle failed on its Service
    assert "forbidden: patch services web in namespace shop" in result.stdout
    assert "Traceback" not in result.stderr


def test_a_closed_port_names_the_url(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # nothing listens on `port` now
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        f"users: [{{name: u, user: {{token: {TOKEN}}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    result = gitgate("status", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 2
    assert_one_clean_line(result, f"error: connection refused: http://127.0.0.1:{port}")


def test_a_hung_server_costs_one_request_timeout(emulator):
    emulator.state.stall = 20.0
    started = time.monotonic()
    result = gitgate("status", "--kubeconfig", emulator.kubeconfig, "--request-timeout", "2s")
    elapsed = time.monotonic() - started
    assert result.returncode == 2
    assert_one_clean_line(result, "error: timed out after 2s",
                          "--request-timeout", emulator.url)
    assert elapsed < 15, "the timeout was retried or not applied"
    emulator.state.stall = 0.0


@pytest.mark.parametrize("flags, expected", [
    (["--listen", "bogus"], "--listen 'bogus' is not HOST:PORT"),
    (["--git-token-file", "/nonexistent/token"], "cannot read the git token file"),
    (["--webhook-secret-file", "/nonexistent/secret"], "--webhook-secret-file"),
    (["--interval", "soon"], "--interval"),
])
def test_run_startup_mistakes_are_one_line_and_exit_2(emulator, tmp_path, flags, expected):
    result = gitgate("run", "--repo", str(tmp_path / "none.git"), "--kubeconfig",
                     emulator.kubeconfig, "--listen", "127.0.0.1:0", *flags, timeout=30)
    assert result.returncode == 2, result.stderr
    assert_one_clean_line(result, expected)


def test_run_on_a_port_in_use_is_one_line_and_exit_2(emulator, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = gitgate("run", "--repo", str(tmp_path / "none.git"), "--kubeconfig",
                         emulator.kubeconfig, "--listen", f"127.0.0.1:{port}", timeout=30)
    assert result.returncode == 2
    assert_one_clean_line(result, f"cannot listen on 127.0.0.1:{port}")


def test_tls_verification_the_kubeconfig_asks_to_skip_is_not_warned_about(tmp_path):
    """`insecure-skip-tls-verify: true` is the kubeconfig author's choice: as kubectl, no
    command warns about it (a warning on every command teaches people to skip stderr), and
    no urllib3 warning leaks either; the one line is the real problem."""
    from gitgate.apiserver.transport import load_client, tls_verification_off

    kubeconfig = Path(tmp_path / "kubeconfig")
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', "
        "insecure-skip-tls-verify: true}}]\n"
        f"users: [{{name: u, user: {{token: {TOKEN}}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    assert tls_verification_off(load_client(str(kubeconfig)))
    result = gitgate("status", "--kubeconfig", str(kubeconfig), "--connect-timeout", "1s")
    assert_one_clean_line(result, "error: connection refused: https://127.0.0.1:1")
    assert "TLS verification" not in result.stderr
