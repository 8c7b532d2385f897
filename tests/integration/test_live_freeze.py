"""A freeze binds to what is live: a gate, a `PAUSE` file or a pause label holds the objects
its bundle has live (its Bundle record's inventory), whatever folder, name, label or parent
kustomization claims them in the commit being judged. Each case is a commit that changes no
freeze file, run through the real CLI against the API emulator."""

from __future__ import annotations

import json
import shutil

import pytest

from gitgate.cli import main
from tests.conftest import write_files
from tests.support.manifests import cm

pytestmark = pytest.mark.integration

PLACEMENT = "defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"


@pytest.fixture
def shop(tmp_path, kube):
    """apps/web (two ConfigMaps, labelled team=shop) and apps/api, applied once at v1."""
    ns = kube.ns("shop")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/web/bundle.yaml": "labels: {team: shop}\n",
        "apps/web/app.yaml": cm("web", ns, "v1") + cm("web-extra", ns, "v1"),
        "apps/api/app.yaml": cm("api", ns, "v1"),
    })
    code, _ = apply(kube, root)
    assert code == 0
    return root, ns


def apply(kube, root, *extra: str) -> tuple[int, dict]:
    code = main(["apply", str(root), "--kubeconfig", kube.kubeconfig, "--instance",
                 kube.run_id, "-o", "json", *extra])
    return code, {}


def run_json(capsys, kube, root) -> tuple[int, dict]:
    capsys.readouterr()
    if kube.emulator is not None:
        kube.emulator.state.requests.clear()
    code = main(["apply", str(root), "--kubeconfig", kube.kubeconfig, "--instance",
                 kube.run_id, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def live_value(kube, ns: str, name: str) -> str | None:
    obj = kube.cluster.get("v1", "ConfigMap", ns, name)
    return None if obj is None else obj["data"]["value"]


def touched(kube, ns: str, *names: str) -> list[tuple[str, str]]:
    """Writes (apply or delete) to the named ConfigMaps of `ns` in the last command (on a
    real cluster the live content the tests read tells the same)."""
    if kube.emulator is None:
        return []
    return [(r.method, r.path) for r in kube.emulator.state.requests
            if r.is_write and r.query.get("dryRun") != "All"
            and any(r.path.endswith(f"/namespaces/{ns}/configmaps/{n}") for n in names)]


def by_name(doc: dict) -> dict[str, dict]:
    return {b["name"]: b for b in doc["bundles"]}


def test_a_paused_folder_emptied_of_its_manifests_keeps_its_objects(shop, kube, capsys):
    root, ns = shop
    write_files(root, {"apps/web/PAUSE": "incident 42\n"})
    assert run_json(capsys, kube, root)[0] == 0
    (root / "apps/web/app.yaml").unlink()
    (root / "apps/web/bundle.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    assert touched(kube, ns, "web", "web-extra") == []
    assert live_value(kube, ns, "web") == "v1" and live_value(kube, ns, "web-extra") == "v1"
    web = by_name(doc)["apps-web"]
    assert web["verdict"] == "held" and "apps/web/PAUSE" in web["message"]


@pytest.mark.parametrize("pause_moves_too", [False, True], ids=["pause-stays", "pause-moves"])
def test_a_paused_source_moved_into_a_subfolder_ships_nothing(shop, kube, capsys,
                                                              pause_moves_too):
    root, ns = shop
    write_files(root, {"apps/web/PAUSE": "incident 42\n"})
    assert run_json(capsys, kube, root)[0] == 0
    (root / "apps/web/v2").mkdir()
    shutil.move(root / "apps/web/app.yaml", root / "apps/web/v2/app.yaml")
    shutil.move(root / "apps/web/bundle.yaml", root / "apps/web/v2/bundle.yaml")
    if pause_moves_too:
        shutil.move(root / "apps/web/PAUSE", root / "apps/web/v2/PAUSE")
    write_files(root, {"apps/web/v2/app.yaml": cm("web", ns, "v2") + cm("web-extra", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert touched(kube, ns, "web", "web-extra") == []
    assert live_value(kube, ns, "web") == "v1" and live_value(kube, ns, "web-extra") == "v1"
    moved = by_name(doc)["apps-web-v2"]
    # a PAUSE left in apps/web holds every source below it, apps/web/v2 too
    assert moved["verdict"] == "held", moved
    if not pause_moves_too:
        assert "apps/web/PAUSE" in moved["message"], moved


def test_a_parent_kustomization_cannot_swallow_a_paused_folder(shop, kube, capsys):
    root, ns = shop
    write_files(root, {"apps/web/PAUSE": "incident 42\n"})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {
        "apps/kustomization.yaml": "resources: [web/app.yaml, api/app.yaml]\n",
        "apps/web/app.yaml": cm("web", ns, "v2") + cm("web-extra", ns, "v2"),
    })
    code, doc = run_json(capsys, kube, root)
    assert touched(kube, ns, "web", "web-extra") == []
    assert live_value(kube, ns, "web") == "v1"
    parent = by_name(doc)["apps"]
    assert parent["verdict"] == "failed" and parent["reason"] == "Frozen" and code == 1


@pytest.mark.parametrize("action", ["hold", "suspend"])
def test_a_gate_holding_a_bundle_by_name_follows_it_across_a_rename(shop, kube, capsys,
                                                                   action):
    root, ns = shop
    write_files(root, {"gates/web.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: web-freeze}\n"
        f"spec: {{bundles: [apps-web], reason: release freeze, action: {action}}}\n")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/web/bundle.yaml": "name: web2\nlabels: {team: shop}\n",
                       "apps/web/app.yaml": cm("web", ns, "v2") + cm("web-extra", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert touched(kube, ns, "web", "web-extra") == []
    assert live_value(kube, ns, "web") == "v1"
    renamed = by_name(doc)["web2"]
    assert renamed["verdict"] == "failed" and renamed["reason"] == "Frozen"
    assert "gates/web.yaml" in renamed["message"] and "apps-web" in renamed["message"]
    assert live_value(kube, ns, "web-extra") == "v1"  # the old name's objects stay live


def test_a_label_gate_follows_a_bundle_whose_label_was_dropped(shop, kube, capsys):
    root, ns = shop
    write_files(root, {"gates/shop.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: shop-freeze}\n"
        "spec: {selector: {matchLabels: {team: shop}}, reason: platform freeze}\n")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/web/bundle.yaml": "labels: {team: none}\n",
                       "apps/web/app.yaml": cm("web", ns, "v2") + cm("web-extra", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert touched(kube, ns, "web", "web-extra") == []
    assert live_value(kube, ns, "web") == "v1"
    web = by_name(doc)["apps-web"]
    assert web["verdict"] == "held" and "gates/shop.yaml" in web["message"]
    assert "team=shop" in web["message"]
    # the unfrozen bundle still goes out
    write_files(root, {"apps/api/app.yaml": cm("api", ns, "v2")})
    assert run_json(capsys, kube, root)[0] == 0
    assert live_value(kube, ns, "api") == "v2" and live_value(kube, ns, "web") == "v1"


def test_an_object_moved_out_of_a_held_bundle_into_an_open_one_is_not_written(shop, kube,
                                                                               capsys):
    root, ns = shop
    write_files(root, {"apps/web/PAUSE": "incident 42\n"})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/web/app.yaml": cm("web", ns, "v1"),
                       "apps/api/app.yaml": cm("api", ns, "v1") + cm("web-extra", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert touched(kube, ns, "web-extra") == []
    assert live_value(kube, ns, "web-extra") == "v1"
    assert by_name(doc)["apps-api"]["reason"] == "Frozen"


def test_once_the_freeze_lifts_the_renamed_bundle_takes_its_objects_over(shop, kube, capsys):
    root, ns = shop
    write_files(root, {"gates/web.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: web-freeze}\n"
        "spec: {bundles: [apps-web], reason: release freeze}\n")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/web/bundle.yaml": "name: web2\n",
                       "apps/web/app.yaml": cm("web", ns, "v2") + cm("web-extra", ns, "v2")})
    assert run_json(capsys, kube, root)[0] == 1
    (root / "gates/web.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    assert code == 0, doc
    assert live_value(kube, ns, "web") == "v2" and live_value(kube, ns, "web-extra") == "v2"
    code, doc = run_json(capsys, kube, root)
    assert code == 0 and live_value(kube, ns, "web") == "v2"
