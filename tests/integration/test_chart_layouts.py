"""The layouts the anchors ship, as they are, with their charts served by a local chart
repository: Argo CD's `helm-dependency` (a chart whose Chart.yaml depends on a chart
repository, values for the dependency in its values.yaml, no templates of its own) and
Fleet's `helm-external` / `helm-multi-chart` (a bundle naming `repo`, `chart` and `version`
of a published chart, with a release name and values). Through the real CLI: `lock`, then
`plan` and `render` (the fetch stage before offline rendering), each rendering what `helm
template` makes of the same chart at the same version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gitgate.model import BUNDLE_LABEL
from gitgate.yamlio import load_documents
from tests.conftest import write_files
from tests.support.chartservers import (
    ChartCA,
    ChartRepo,
    allow,
    gitgate_cli,
    helm,
    make_chart,
    package,
)
from tests.support.schemas import validate

pytestmark = pytest.mark.integration


def comparable(obj: dict) -> dict:
    """An object as both sides make it, but for what gitgate adds (its bundle label, and
    the release namespace it fills in)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "namespace"}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != BUNDLE_LABEL}
    meta.pop("labels", None)
    if labels:
        meta["labels"] = labels
    return {**obj, "metadata": meta}


def templated(*argv: str, home: Path) -> list[dict]:
    return sorted((comparable(d.data) for d in load_documents(helm("template", *argv,
                                                                    home=home))),
                  key=lambda o: (o["kind"], o["metadata"]["name"]))


def test_argo_cd_and_fleet_layouts_render_as_helm_template_of_the_same_charts(tmp_path):
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    cache = tmp_path / "cache"
    with ChartRepo(tmp_path / "served", ca, home) as repo:
        for version in ("9.0.2", "9.0.3"):
            repo.publish(package(make_chart(tmp_path / f"wp-{version}", "wordpress", version),
                                 tmp_path / "packages", home))
        repo.publish(package(make_chart(tmp_path / "mon", "rancher-monitoring", "9.4.200"),
                             tmp_path / "packages", home))
        root = write_files(tmp_path / "repo", {
            "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n"
                            + allow({"url": repo.url, "caFile": str(ca.pem)}),
            # Argo CD's helm-dependency, as its repo has it: Chart.yaml and values.yaml
            "helm-dependency/Chart.yaml": (
                "apiVersion: v2\nname: helm-dependency\ndescription: a chart that depends on "
                "a chart repository\ntype: application\nversion: 0.1.0\n"
                f"dependencies:\n- name: wordpress\n  version: 9.0.x\n"
                f"  repository: {repo.url}\n"),
            "helm-dependency/values.yaml": "wordpress:\n  message: from-argo\n",
            # Fleet's helm-external / helm-multi-chart: repo, chart, version of a published
            # chart (fleet.yaml's keys, in bundle.yaml)
            "helm-external/bundle.yaml": (
                "namespace: cattle-monitoring-system\nreleaseName: rancher-monitoring\n"
                f"helm:\n  repo: {repo.url}\n  chart: rancher-monitoring\n"
                "  version: 9.4.200\nvalues:\n  message: from-fleet\n"),
        })
        locked = gitgate_cli("lock", str(root), cache=cache)
        assert locked.returncode == 0, locked.stderr
        assert "version: 9.0.3" in (root / "helm-dependency/chart.lock.yaml").read_text()
        assert not (root / "helm-dependency/charts").exists()  # nothing vendored

        planned = gitgate_cli("plan", str(root), "-o", "json", cache=tmp_path / "fresh")
        assert planned.returncode == 0, planned.stderr
        document = json.loads(planned.stdout)
        validate(document, "Plan")
        found = {b["name"]: b for b in document["bundles"]}
        assert {n: b["verdict"] for n, b in found.items()} == {
            "helm-dependency": "apply", "helm-external": "apply"}
        assert [(c["name"], c["dependency"], c["version"])
                for c in found["helm-dependency"]["charts"]] == [
            ("wordpress", "wordpress", "9.0.3")]
        assert [(c["name"], c["version"]) for c in found["helm-external"]["charts"]] == [
            ("rancher-monitoring", "9.4.200")]

        done = gitgate_cli("render", str(root), "-o", "json", cache=tmp_path / "fresh")
        assert done.returncode == 0, done.stderr
        rendered = {b["name"]: sorted((comparable(o) for o in b["objects"]),
                                      key=lambda o: (o["kind"], o["metadata"]["name"]))
                    for b in json.loads(done.stdout)["bundles"]}

    # Argo CD: the chart with its dependency where `helm dependency build` puts it
    argo = tmp_path / "argo" / "helm-dependency"
    shutil.copytree(root / "helm-dependency", argo,
                    ignore=shutil.ignore_patterns("chart.lock.yaml"))
    (argo / "charts").mkdir()
    shutil.copy2(tmp_path / "packages" / "wordpress-9.0.3.tgz", argo / "charts")
    assert rendered["helm-dependency"] == templated(
        "helm-dependency", str(argo), "--include-crds", "--namespace", "default", home=home)
    assert [o["data"]["message"] for o in rendered["helm-dependency"]] == ["from-argo"]

    values = tmp_path / "fleet-values.json"
    values.write_text(json.dumps({"message": "from-fleet"}))
    assert rendered["helm-external"] == templated(
        "rancher-monitoring", str(tmp_path / "packages" / "rancher-monitoring-9.4.200.tgz"),
        "--include-crds", "--namespace", "cattle-monitoring-system", "--values", str(values),
        home=home)
