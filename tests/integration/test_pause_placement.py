"""Where a `PAUSE` file may stand: in a source's folder it holds that source. A `PAUSE` a
careless user puts in the folder above the sources (`apps/PAUSE` for `apps/a` and `apps/h`)
is meant to hold them all. Through the real CLI against the API emulator."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_files
from tests.support.applyrepo import PLACEMENT
from tests.support.applyrepo import apply_cli as apply
from tests.support.manifests import cm

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def emulated(kube):
    if kube.emulator is None:
        pytest.skip("reads the API emulator's request log and records (GITGATE_TEST_KUBECONFIG "
                    "is set)")


def test_a_pause_in_the_folder_above_the_sources_holds_them(tmp_path, kube, capsys):
    ns = kube.ns("pp")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1"),
        "apps/h/app.yaml": cm("h", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, {"apps/PAUSE": "incident\n", "apps/a/app.yaml": cm("a", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    verdicts = {b["name"]: b["verdict"] for b in doc["bundles"]}
    assert kube.cluster.get("v1", "ConfigMap", ns, "a")["data"]["value"] == "v1", verdicts
    assert verdicts["apps-a"] == verdicts["apps-h"] == "held"
    held = next(b for b in doc["bundles"] if b["name"] == "apps-a")
    assert "apps/PAUSE" in json.dumps(held) and "incident" in json.dumps(held)
    write_files(root, {"apps/a/PAUSE": "mine\n"})
    (root / "apps" / "PAUSE").unlink()
    code, doc = apply(capsys, kube, root)
    verdicts = {b["name"]: b["verdict"] for b in doc["bundles"]}
    assert (verdicts["apps-a"], verdicts["apps-h"]) == ("held", "apply")
    (root / "apps" / "a" / "PAUSE").unlink()
    assert apply(capsys, kube, root)[0] == 0
    assert kube.cluster.get("v1", "ConfigMap", ns, "a")["data"]["value"] == "v2"


def test_a_pause_at_the_root_holds_every_bundle(tmp_path, kube, capsys):
    ns = kube.ns("pr")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, {"PAUSE": "freeze everything\n", "apps/a/app.yaml": cm("a", ns, "v2"),
                       "apps/b/app.yaml": cm("b", ns, "v1")})
    code, doc = apply(capsys, kube, root)
    assert {b["name"]: b["verdict"] for b in doc["bundles"]} == {
        "ns": "held", "apps-a": "held", "apps-b": "held"}
    assert kube.cluster.get("v1", "ConfigMap", ns, "a")["data"]["value"] == "v1"
    assert kube.cluster.get("v1", "ConfigMap", ns, "b") is None


def test_a_pause_above_holds_what_its_sources_have_live_when_a_record_is_lost(
        tmp_path, kube, capsys):
    """The held source's record deleted on the API server and its folder emptied: its object,
    moved into an open bundle outside the paused folder, stays as it is live."""
    ns = kube.ns("pl")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1"),
        "web/app.yaml": cm("w", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, {"apps/PAUSE": "incident\n"})
    assert apply(capsys, kube, root)[0] == 0
    for key in [k for k in kube.emulator.state.objects
                if k[1] == "bundles" and k[3].endswith("apps-h")]:
        kube.cluster.delete("gitgate.io/v1alpha1", "Bundle", key[2], key[3])
    (root / "apps" / "h" / "app.yaml").unlink()
    write_files(root, {"web/app.yaml": cm("w", ns, "v1") + cm("moving", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    web = next(b for b in doc["bundles"] if b["name"] == "web")
    assert web["failed"] and web["reason"] == "Frozen", web
    assert kube.cluster.get("v1", "ConfigMap", ns, "moving")["data"]["value"] == "v1"
    assert kube.cluster.get("v1", "ConfigMap", ns, "h")["data"]["value"] == "v1"
