"""The webhook secret over real HTTP: `gitgate run` reads `--webhook-secret-file` again when
it changes (after a rotation the old secret is refused at once, for the Git webhook's
signature and for /reconcile's Bearer), and wrong secrets are counted per client address
(a late 429 past the share) without ever refusing the right one."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import os
import subprocess
import sys

import pytest

from gitgate.endpoints.routes import LoopEndpoints
from gitgate.endpoints.server import EndpointServer
from gitgate.endpoints.signin import Throttle
from tests.conftest import REPO_ROOT, committed_repo
from tests.support.http import free_port, get, until
from tests.support.webrepo import web_repo

pytestmark = pytest.mark.integration
BODY = b'{"ref": "refs/heads/main"}'


def post(port: int, path: str, source: str = "127.0.0.1", **headers: str) -> int:
    """A POST from the address `source` (any of 127/8 reaches loopback)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                      source_address=(source, 0))
    try:
        conn.request("POST", path, BODY, {k.replace("_", "-"): v for k, v in headers.items()})
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def signed(secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), BODY, hashlib.sha256).hexdigest()


def hook(port: int, secret: str, source: str = "127.0.0.1") -> int:
    return post(port, "/hooks/git", source, X_Hub_Signature_256=signed(secret))


def reconcile(port: int, secret: str, source: str = "127.0.0.1") -> int:
    return post(port, "/reconcile", source, Authorization=f"Bearer {secret}")


def test_a_rotated_secret_file_ends_the_old_secret_in_a_running_loop(tmp_path, emulator):
    root, flags = web_repo(tmp_path, emulator)
    committed_repo(root)
    secret_file = tmp_path / "hook-secret"
    secret_file.write_text("old-s3cret\n")
    port = free_port()
    log = tmp_path / "run.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "run", "--repo", f"file://{root}", *flags,
         "--listen", f"127.0.0.1:{port}", "--interval", "10m", "--no-leader-elect",
         "--webhook-secret-file", str(secret_file), "--cache-dir", str(tmp_path / "cache")],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=log.open("w"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        until(lambda: get(f"http://127.0.0.1:{port}/healthz")[0] == 200, 60, "gitgate run")
        assert hook(port, "old-s3cret") == 202
        assert reconcile(port, "old-s3cret") == 202
        rotated = tmp_path / "hook-secret.new"
        rotated.write_text("new-s3cret\n")
        rotated.replace(secret_file)  # as a Secret volume swaps its files
        assert hook(port, "old-s3cret") == 401
        assert reconcile(port, "old-s3cret") == 401
        assert hook(port, "new-s3cret") == 202
        assert reconcile(port, "new-s3cret") == 202
        secret_file.unlink()  # no secret: nothing is accepted, nothing is left open
        assert hook(port, "new-s3cret") == 401 and reconcile(port, "new-s3cret") == 401
        assert reconcile(port, "") == 401
    finally:
        process.terminate()
        process.wait(15)
    assert "Traceback" not in log.read_text()


def test_wrong_secrets_from_one_address_never_lock_out_the_right_one():
    """Ten wrong secrets a minute from one address (Bearer or signature alike): that
    address's further wrong ones are answered 429; the right secret gets in from every
    address, that one included; other addresses are not counted against."""
    now = [0.0]
    passes: list[int] = []
    server = EndpointServer(("127.0.0.1", 0), LoopEndpoints(
        ready=lambda: True, status=lambda: {}, metrics=lambda: b"",
        trigger=lambda: None, webhook_secret=b"s3cret",
        request_pass=lambda: passes.append(1) or len(passes),
        throttle=Throttle(per_minute=10, clock=lambda: now[0], delay=0))).start()
    port = server.port
    try:
        for guess in range(8):
            assert reconcile(port, f"guess-{guess}", "127.0.0.2") == 401
        assert hook(port, "guess-8", "127.0.0.2") == 401
        assert reconcile(port, "guess-9", "127.0.0.2") == 401
        assert reconcile(port, "guess-10", "127.0.0.2") == 429
        assert hook(port, "guess-11", "127.0.0.2") == 429
        for source in ("127.0.0.1", "127.0.0.3", "127.0.0.2"):
            assert reconcile(port, "s3cret", source) == 202, source
            assert hook(port, "s3cret", source) == 202, source
        assert reconcile(port, "guess", "127.0.0.3") == 401  # its own count
        now[0] = 61.0
        assert reconcile(port, "guess-12", "127.0.0.2") == 401  # a new minute
        assert len(passes) == 3
    finally:
        server.stop()
