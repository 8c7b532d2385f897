"""Issue 28, items 8 and 10: a failure keeps its file and line in every output (`apply`,
`status`, the loop's log and `/status`), and one typo in a bundle.yaml is reported once, at its
line, instead of as a failure per folder below it plus the clashes those folders cause."""

from __future__ import annotations

import json
import logging

import pytest

from tests.conftest import write_files
from tests.support.hostile import gitgate
from tests.support.looping import Upstream, reconciler, served_status
from tests.support.schemas import validate

pytestmark = pytest.mark.integration
BROKEN = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n  labels: a: b\n"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}}}\n"


def located(text: str) -> bool:
    return "web/broken.yaml:5" in text


def test_apply_and_status_name_the_file_and_line_in_tables_and_json(tmp_path, kube):
    ns = kube.ns("located")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "ns/bundle.yaml": f"name: {kube.run_id}-ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "web/bundle.yaml": f"name: {kube.run_id}-web\n",
        "web/cm.yaml": CM.format(name="web", ns=ns), "web/broken.yaml": BROKEN,
        "ok/bundle.yaml": f"name: {kube.run_id}-ok\n", "ok/cm.yaml": CM.format(name="ok", ns=ns)})
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    table = gitgate("apply", str(root), *flags)
    assert table.returncode == 1
    row = next(line for line in table.stdout.splitlines() if f"{kube.run_id}-web " in line)
    assert located(row), table.stdout
    as_json = json.loads(gitgate("apply", str(root), *flags, "-o", "json").stdout)
    web = next(b for b in as_json["bundles"] if b["name"] == f"{kube.run_id}-web")
    assert located(web["message"]) and web["reason"] == "RenderFailed"
    ok = next(b for b in as_json["bundles"] if b["name"] == f"{kube.run_id}-ok")
    assert not ok["failed"]  # one broken bundle never stops the others

    status = gitgate("status", *flags)
    row = next(line for line in status.stdout.splitlines() if f"{kube.run_id}-web " in line)
    assert located(row), status.stdout
    shown = json.loads(gitgate("status", *flags, "-o", "json").stdout)
    web = next(b for b in shown["bundles"] if b["name"] == f"{kube.run_id}-web")
    assert located(web["message"])
    assert web["reasons"][0]["file"] == "web/broken.yaml" and web["reasons"][0]["line"] == 5


def test_the_loop_logs_and_serves_the_file_and_line(tmp_path, kube, tools, caplog):
    upstream = Upstream(tmp_path, kube)
    upstream.commit({"app/broken.yaml": BROKEN.replace("broken", "web")}, "a typo")
    loop = reconciler(upstream, kube, tools, tmp_path)
    with caplog.at_level(logging.INFO, logger="gitgate"):
        loop.tick()
    loop.observer.refresh_status()  # as the running loop does after a pass
    assert "app/broken.yaml:5" in loop.state.last_error
    assert any("app/broken.yaml:5" in r.getMessage() for r in caplog.records
               if r.levelno >= logging.WARNING)
    served = served_status(loop)
    assert "app/broken.yaml:5" in json.dumps(served)
    validate(served, "LoopStatus")
    shown = {b["name"]: b for b in served["bundles"]}  # what is live, beside what was tried
    head = upstream.work.head.commit.hexsha
    assert shown[f"{kube.run_id}-ns"]["lastAppliedRevision"] == head
    assert shown[f"{kube.run_id}-app"]["lastAppliedRevision"] is None
    assert shown[f"{kube.run_id}-app"]["lastAttemptedRevision"] == head


def test_a_typo_in_an_overlay_bundle_yaml_is_one_failure_at_its_line(tmp_path):
    base = {"app/base/kustomization.yaml": "resources: [cm.yaml]\n",
            "app/base/cm.yaml": CM.format(name="app", ns="default"),
            "app/overlays/prod/kustomization.yaml": "resources: [../../base]\n"
                                                    "namePrefix: prod-\n",
            "app/overlays/test/kustomization.yaml": "resources: [../../base]\n"}
    for typo, line, words in (
            ("name: app\ndir: overlays/prod\nlabels: a: b\n", 3, "invalid YAML"),
            ("name: app\ndri: overlays/prod\n", 2, "unknown field(s) dri"),
            ("name: app\nsplit: apps\ndir: overlays/prod\n", 2, "split must be"),
            ("name: app\ndir: overlays/prd\n", 2, "dir 'overlays/prd' is not a kustomize")):
        root = write_files(tmp_path / f"repo{line}{len(words)}", {
            "gitgate.yaml": "paths: [.]\n", **base, "app/bundle.yaml": typo})
        check = gitgate("check", str(root), "-o", "json")
        assert check.returncode == 1
        failures = [(c["name"], f) for c in json.loads(check.stdout)["cases"]
                    for f in c["failures"]]
        causes = [f for _, f in failures if "not planned" not in f["message"]]
        assert len(causes) == 1, failures
        assert causes[0]["message"].startswith(f"app/bundle.yaml:{line}: "), causes
        assert words in causes[0]["message"]
        assert not any(f["type"] == "DuplicateObject" for _, f in failures)
        rendered = json.loads(gitgate("render", str(root), "-o", "json").stdout)
        assert [b["name"] for b in rendered["bundles"] if b["objects"]] == []
