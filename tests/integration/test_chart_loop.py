"""The loop with a published chart: `gitgate run` (a subprocess, against the API emulator)
applies it; a commit bumping the chart's version while a hold gate is in force ships nothing
of the new chart (the hold freezes the chart version: the locked digest is part of the
bundle's); a later pass whose chart repository cannot be reached keeps the live objects
(fail closed)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.support.chartservers import (
    ChartCA,
    ChartRepo,
    allow,
    free_port,
    gitgate_cli,
    make_chart,
    package,
)
from tests.support.looping import Upstream, start_run, terminate, wait_for

pytestmark = pytest.mark.integration


def _status(port: int) -> dict:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as answer:
            return json.loads(answer.read())
    except OSError:
        return {}


def _bundle(status: dict, name: str) -> dict:
    return next((b for b in (status.get("pass") or {}).get("bundles", [])
                 if b["name"] == name), {})


def test_the_loop_applies_a_chart_holds_its_upgrade_and_keeps_it_when_unreachable(
        kube, tmp_path: Path):
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    cli_cache = tmp_path / "cli-cache"
    repo = ChartRepo(tmp_path / "served", ca, home).__enter__()
    try:
        for version in ("6.5.0", "6.6.0", "6.7.0"):
            repo.publish(package(make_chart(tmp_path / version, "podinfo", version),
                                 tmp_path / "packages", home))
        upstream = Upstream(tmp_path, kube)
        name = f"{kube.run_id}-podinfo"
        bundle = (f"name: {name}\nnamespace: {upstream.ns}\nhelm:\n  repo: {repo.url}\n"
                  "  chart: podinfo\n  version: '{version}'\n")

        def push(files: dict[str, str], message: str) -> str:
            write_files(upstream.root, files)
            locked = gitgate_cli("lock", str(upstream.root), cache=cli_cache)
            assert locked.returncode == 0, locked.stderr
            return upstream.commit({}, message)

        first = push({"gitgate.yaml": "defaults: {placement: {clusterAffinity: "
                                      "{clusterNames: [m1]}}}\n"
                                      + allow({"url": repo.url, "caFile": str(ca.pem)}),
                      "apps/podinfo/bundle.yaml": bundle.format(version="6.5.0")},
                     "podinfo 6.5.0")
        port = free_port()
        proc = start_run(upstream.url, kube, tmp_path / "run-cache", f"127.0.0.1:{port}")

        def live() -> str | None:
            found = kube.cluster.get("v1", "ConfigMap", upstream.ns, "podinfo-podinfo")
            return None if found is None else found["data"]["version"]

        def passed(revision: str, verdict: str) -> bool:
            status = _status(port)
            return (proc.poll() is not None or status.get("revision") == revision
                    and _bundle(status, name).get("verdict") == verdict)

        try:
            wait_for(lambda: passed(first, "apply"), timeout=60)
            assert proc.poll() is None
            assert live() == "6.5.0"
            asked = len(repo.requests)
            other = upstream.commit({"app/cm.yaml": upstream.configmap("two")}, "elsewhere")
            wait_for(lambda: passed(other, "apply"), timeout=60)
            assert len(repo.requests) == asked  # the chart is in the store: nothing fetched

            # a hold, and the chart bumped in the same push: nothing of 6.6.0 ships
            held = push({**upstream.gate("hold", f"{{bundles: ['{name}'], reason: train}}"),
                         "apps/podinfo/bundle.yaml": bundle.format(version="6.6.0")},
                        "hold, and podinfo 6.6.0")
            wait_for(lambda: passed(held, "held"), timeout=60)
            assert proc.poll() is None
            assert live() == "6.5.0"

            # the hold lifted and 6.7.0 locked, while the repository cannot be reached
            push({"apps/podinfo/bundle.yaml": bundle.format(version="6.7.0")},
                 "podinfo 6.7.0, still held")
            repo.__exit__(None, None, None)
            upstream.work.git.rm("-q", "gates/hold.yaml")
            upstream.work.git.commit("-q", "-m", "lift the hold: podinfo 6.7.0")
            upstream.work.git.push("origin", "main", "--force")
            lifted = upstream.work.head.commit.hexsha
            wait_for(lambda: passed(lifted, "failed"), timeout=60)
            assert proc.poll() is None
            said = _bundle(_status(port), name)
            assert "cannot be reached" in said["message"] and repo.url in said["message"]
            assert live() == "6.5.0"  # fail closed: the live objects stay as they were
        finally:
            terminate(proc, timeout=30)
        logs = proc.stderr.read()
        assert proc.returncode == 0, logs[-2000:]
    finally:
        repo.__exit__(None, None, None)
