"""`make demo` (tools/demo.py): examples/repo planned and its published chart rendered, the
chart fetched from examples/charts served on loopback, checked against the committed lock,
and rendered offline. The demo runs on a copy of the example repo that names a free port
instead of 8879 (the port is all that differs), so it never waits for the fixed one."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitgate.yamlio import load_one
from tests.conftest import EXAMPLES, REPO_ROOT
from tests.support.chartservers import free_port, gitgate_cli
from tests.support.democharts import EXAMPLE_CHARTS, served

pytestmark = pytest.mark.integration

LOCK = "apps/echo/chart.lock.yaml"
NAMING_THE_PORT = ("gitgate.yaml", "apps/echo/bundle.yaml", LOCK)


def example_on(port: int, folder: Path) -> Path:
    """examples/repo copied to `folder`, its chart repository on `port`."""
    shutil.copytree(EXAMPLES, folder)
    for name in NAMING_THE_PORT:
        file = folder / name
        text = file.read_text()
        assert "http://127.0.0.1:8879" in text, name
        file.write_text(text.replace("http://127.0.0.1:8879", f"http://127.0.0.1:{port}"))
    return folder


def demo(repo: Path, port: int, charts: Path = EXAMPLE_CHARTS) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "demo.py"), "--repo",
                           str(repo), "--port", str(port), "--charts", str(charts)],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)


def test_the_demo_fetches_the_locked_chart_and_renders_it(tmp_path):
    port = free_port()
    done = demo(example_on(port, tmp_path / "repo"), port)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "chart repository: GET /echo-1.4.2.tgz 200" in out  # fetched, not found at hand
    [row] = [line for line in out.splitlines() if line.startswith("echo ")]
    assert row.split()[2] == "2"  # its Deployment and Service
    assert "charts:\n  echo: echo 1.4.2" in out
    rendered = out[out.index("$ gitgate render"):]
    assert "kind: Deployment" in rendered and "replicas: 2" in rendered  # bundle.yaml's values
    assert "image: registry.k8s.io/e2e-test-images/agnhost:2.47" in rendered


def test_the_committed_lock_is_what_gitgate_lock_writes_from_the_served_archive(tmp_path):
    archive = (EXAMPLE_CHARTS / "echo-1.4.2.tgz").read_bytes()
    digest = "sha256:" + hashlib.sha256(archive).hexdigest()
    [entry] = load_one((EXAMPLES / LOCK).read_text())["charts"]
    assert (entry["version"], entry["digest"]) == ("1.4.2", digest)
    index = load_one((EXAMPLE_CHARTS / "index.yaml").read_text())
    assert [f"sha256:{e['digest']}" for e in index["entries"]["echo"]] == [digest]

    port = free_port()
    repo = example_on(port, tmp_path / "repo")
    before = (repo / LOCK).read_text()
    with served(EXAMPLE_CHARTS, port):
        locked = gitgate_cli("lock", str(repo), "--upgrade", cache=tmp_path / "store")
    assert locked.returncode == 0, locked.stderr
    assert (repo / LOCK).read_text() == before  # the range resolved again to the same pin


def test_a_republished_archive_is_refused_against_the_lock(tmp_path):
    """The served folder's archive replaced by other bytes of the same chart and version (the
    same files, compressed anew): the lock's digest refuses it, and nothing of it renders."""
    charts = tmp_path / "charts"
    shutil.copytree(EXAMPLE_CHARTS, charts)
    archive = charts / "echo-1.4.2.tgz"
    archive.write_bytes(gzip.compress(gzip.decompress(archive.read_bytes()), mtime=0))
    port = free_port()
    done = demo(example_on(port, tmp_path / "repo"), port, charts)
    assert done.returncode == 1
    assert "chart repository: GET /echo-1.4.2.tgz 200" in done.stdout
    assert "apps/echo/bundle.yaml:11: " in done.stdout + done.stderr
    assert "not the locked sha256:" in done.stdout + done.stderr
    [row] = [line for line in done.stdout.splitlines() if line.startswith("echo ")]
    assert row.split()[1:3] == ["failed", "0"]
    rendered = done.stdout[done.stdout.index("$ gitgate render"):]
    assert "kind: Deployment" not in rendered
