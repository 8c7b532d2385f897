"""A chart upgrade is a change like any other: `plan` (the real CLI) names it, `podinfo
6.5.0 → 6.6.0`, beside the rendered diff, against what the bundle's record says is live or
against `--since REV`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import committed_repo, write_files
from tests.support.chartservers import (
    ChartCA,
    ChartRepo,
    allow,
    gitgate_cli,
    make_chart,
    package,
)
from tests.support.schemas import validate

pytestmark = pytest.mark.integration


def test_plan_shows_a_chart_version_change_with_the_rendered_diff(kube, tmp_path: Path):
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    cache = tmp_path / "cache"
    with ChartRepo(tmp_path / "served", ca, home) as repo:
        for version in ("6.5.0", "6.6.0"):
            repo.publish(package(make_chart(tmp_path / version, "podinfo", version),
                                 tmp_path / "packages", home))
        ns = kube.ns("web")
        bundle = (f"name: {kube.run_id}-podinfo\nnamespace: {ns}\nhelm:\n  repo: {repo.url}\n"
                  "  chart: podinfo\n  version: '{version}'\n")
        root = write_files(tmp_path / "repo", {
            "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n"
                            + allow({"url": repo.url, "caFile": str(ca.pem)}),
            "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
            "ns/bundle.yaml": f"name: {kube.run_id}-ns\n",
            "apps/podinfo/bundle.yaml": bundle.format(version="6.5.0")})
        assert gitgate_cli("lock", str(root), cache=cache).returncode == 0
        git_repo = committed_repo(root)
        flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
        applied = gitgate_cli("apply", str(root), *flags, cache=cache)
        assert applied.returncode == 0, applied.stderr

        write_files(root, {"apps/podinfo/bundle.yaml": bundle.format(version="6.6.0")})
        assert gitgate_cli("lock", str(root), cache=cache).returncode == 0
        git_repo.git.add("-A")
        git_repo.git.commit("-m", "podinfo 6.6.0")

        table = gitgate_cli("plan", str(root), *flags, cache=cache)
        assert table.returncode == 0, table.stderr
        assert f"{kube.run_id}-podinfo: podinfo 6.5.0 → 6.6.0" in table.stdout
        diff = [line for line in table.stdout.splitlines()
                if "ConfigMap" in line and "podinfo-podinfo" in line]
        assert len(diff) == 1 and "configured" in diff[0] and "data.version" in diff[0]
        assert f"{kube.run_id}-ns: " not in table.stdout.split("charts:")[1].split("\n\n")[0]

        done = gitgate_cli("plan", str(root), *flags, "-o", "json", cache=cache)
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        validate(document, "Plan")
        found = {b["name"]: b for b in document["bundles"]}
        chart = found[f"{kube.run_id}-podinfo"]["charts"]
        assert [(c["name"], c["from"]["version"], c["version"], c["changed"])
                for c in chart] == [("podinfo", "6.5.0", "6.6.0", True)]
        changed = [c for c in found[f"{kube.run_id}-podinfo"]["changes"]
                   if c["kind"] == "ConfigMap"]
        assert changed[0]["action"] == "configured" and ".data.version" in changed[0]["fields"]
        assert found[f"{kube.run_id}-ns"]["charts"] == []

        # in CI, with no cluster: against the branch the change merges into
        since = gitgate_cli("plan", str(root), "--since", "HEAD~1", cache=cache)
        assert since.returncode == 0, since.stderr
        assert "podinfo 6.5.0 → 6.6.0" in since.stdout
        alone = gitgate_cli("plan", str(root), cache=cache)
        assert "podinfo 6.6.0" in alone.stdout and "→ 6.6.0" not in alone.stdout
