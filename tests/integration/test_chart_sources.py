"""Charts from elsewhere, with real servers: an HTTPS chart repository served from a folder
(test CA) and the CNCF distribution registry (`docker-registry`), charts packaged and pushed
with the real helm; `gitgate lock`, `render`, `check` and `plan` run as the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.support.chartservers import (
    ChartCA,
    ChartRepo,
    Registry,
    helm,
    make_chart,
    package,
)

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[2]


def gitgate(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITGATE_CHART_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=180, cwd=REPO_ROOT, env=env)


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def allow(*entries: dict[str, object]) -> str:
    return "charts:\n  repositories:\n" + "".join(
        "    - " + json.dumps(entry) + "\n" for entry in entries)


def rendered(cache: Path, root: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    done = gitgate("render", str(root), "-o", "json", cache=cache)
    assert done.returncode in (0, 1), done.stderr
    return done, json.loads(done.stdout)


def objects(document: dict, bundle: str) -> list[dict]:
    return next(b["objects"] for b in document["bundles"] if b["name"] == bundle)


@pytest.fixture
def servers(tmp_path: Path):
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    with ChartRepo(tmp_path / "served", ca, home) as repo, \
            Registry(tmp_path / "registry", ca, home) as registry:
        yield ca, repo, registry, home


def test_a_published_chart_by_version_renders_as_helm_template_of_it(servers, tmp_path):
    ca, repo, _, home = servers
    for version in ("6.5.0", "6.6.0"):
        repo.publish(package(make_chart(tmp_path / f"src-{version}", "podinfo", version),
                             tmp_path / "packages", home))
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": allow({"url": repo.url, "caFile": str(ca.pem)}),
        "apps/podinfo/bundle.yaml": f"helm: {{repo: {repo.url}, chart: podinfo, "
                                    "version: '6.5.0'}\nvalues: {message: hi}\n",
    })
    cache = tmp_path / "cache"
    locked = gitgate("lock", str(root), cache=cache)
    assert locked.returncode == 0, locked.stderr
    lock = (root / "apps/podinfo/chart.lock.yaml").read_text()
    archive = tmp_path / "packages" / "podinfo-6.5.0.tgz"
    assert "version: 6.5.0" in lock and sha256(archive) in lock

    done, document = rendered(cache, root)
    assert done.returncode == 0, done.stderr
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"message": "hi"}))
    reference = helm("template", "podinfo", str(archive), "--include-crds", "--namespace",
                     "default", "--values", str(values), home=home)
    assert "message: \"hi\"" in reference
    got = objects(document, "apps-podinfo")
    assert [o["data"] for o in got] == [{"message": "hi", "version": "6.5.0"}]
    assert got[0]["metadata"]["labels"]["helm.sh/chart"] == "podinfo-6.5.0"


def test_an_oci_chart_a_range_resolved_and_locked_and_nothing_fetched_again(servers, tmp_path):
    ca, _, registry, home = servers
    for version in ("1.2.0", "1.3.0", "2.0.0"):
        registry.push(package(make_chart(tmp_path / f"src-{version}", "web", version),
                              tmp_path / "packages", home))
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": allow({"url": f"oci://{registry.host}/charts", "caFile": str(ca.pem)}),
        "apps/web/bundle.yaml": f"helm: {{chart: oci://{registry.host}/charts/web, "
                                "version: '^1.2'}\n",
    })
    cache = tmp_path / "cache"
    assert gitgate("lock", str(root), cache=cache).returncode == 0
    lock = (root / "apps/web/chart.lock.yaml").read_text()
    assert "version: 1.3.0" in lock and "requested: ^1.2" in lock
    assert sha256(tmp_path / "packages" / "web-1.3.0.tgz") in lock
    # a newer 1.x published later changes nothing: the range was resolved once
    registry.push(package(make_chart(tmp_path / "src-1.4.0", "web", "1.4.0"),
                          tmp_path / "packages", home))
    assert gitgate("lock", str(root), cache=cache).returncode == 0
    assert (root / "apps/web/chart.lock.yaml").read_text() == lock
    before = len(registry.requests())
    done, document = rendered(cache, root)
    assert done.returncode == 0, done.stderr
    assert objects(document, "apps-web")[0]["data"]["version"] == "1.3.0"
    assert len(registry.requests()) == before  # in the store since `lock`: nothing fetched
