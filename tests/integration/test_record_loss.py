"""What a freeze holds when a Bundle record is lost or edited: someone with access to the API
server deletes the record of a frozen bundle (`kubectl delete bundles ...`, taking it for a
status object) or removes entries from it, then a commit moves one of its live objects into
another bundle. The object's live `gitgate.io/bundle` label still names the frozen bundle,
and the write is refused. Through the real CLI against the API emulator's request log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitgate.cli import main
from gitgate.model import bundle_label_value
from tests.conftest import write_files
from tests.support.applyrepo import PLACEMENT
from tests.support.applyrepo import apply_cli as apply
from tests.support.manifests import cm

pytestmark = pytest.mark.integration

HELD = "apps-h"


@pytest.fixture(autouse=True)
def emulated(kube):
    if kube.emulator is None:
        pytest.skip("reads the API emulator's request log (GITGATE_TEST_KUBECONFIG is set)")


def gate(spec: str) -> dict[str, str]:
    return {"gates/h.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                            f"metadata: {{name: h}}\nspec: {spec}\n"}


PAUSED = {"apps/h/PAUSE": "incident\n"}
SUSPENDED = gate(f"{{bundles: [{HELD}], action: suspend, clusters: [member2], "
                 "reason: member2 maintenance}")


def held_repo(tmp_path: Path, kube, capsys, freeze: dict[str, str]) -> tuple[Path, str]:
    """apps/a (ConfigMap a) and apps/h (h, moving) applied, then apps/h frozen by `freeze`."""
    ns = kube.ns("rec")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1"),
        "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, freeze)
    code, doc = apply(capsys, kube, root)
    assert code == 0, doc
    return root, ns


def record_keys(kube, bundle: str) -> list:
    return [key for key in kube.emulator.state.objects
            if key[1] == "bundles" and key[3].endswith(f".{bundle}")]


def delete_record(kube, bundle: str) -> None:
    keys = record_keys(kube, bundle)
    assert keys
    for key in keys:
        kube.cluster.delete("gitgate.io/v1alpha1", "Bundle", key[2], key[3])


def writes_of(kube, name: str) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in kube.emulator.state.requests
            if r.is_write and r.path.endswith(f"/configmaps/{name}")]


def value(kube, ns: str, name: str) -> str | None:
    live = kube.cluster.get("v1", "ConfigMap", ns, name)
    return None if live is None else live["data"]["value"]


def assert_refused(doc: dict, bundle: str, kube, ns: str) -> dict:
    """`bundle` failed (Frozen) naming the object and the frozen bundle; nothing wrote it."""
    result = {b["name"]: b for b in doc["bundles"]}[bundle]
    assert result["failed"] and result["reason"] == "Frozen", result
    assert f"ConfigMap {ns}/moving" in result["message"], result
    assert f"live in bundle {HELD}" in result["message"], result
    assert writes_of(kube, "moving") == []
    assert value(kube, ns, "moving") == "v1"
    return result


@pytest.mark.parametrize("freeze", [PAUSED, SUSPENDED], ids=["held", "suspended"])
def test_a_frozen_bundles_object_stays_when_its_record_is_deleted(tmp_path, kube, capsys,
                                                                  freeze):
    root, ns = held_repo(tmp_path, kube, capsys, freeze)
    delete_record(kube, HELD)
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/app.yaml": cm("h", ns, "v1")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    verdict = "held" if freeze is PAUSED else "suspended"
    assert {b["name"]: b["verdict"] for b in doc["bundles"]}[HELD] == verdict
    result = assert_refused(doc, "apps-a", kube, ns)
    assert result["applied"] == []  # nothing of the bundle went out
    capsys.readouterr()  # `plan --kubeconfig` shows what apply refuses
    main(["plan", str(root), "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id,
          "-o", "json"])
    planned = {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}
    change = next(c for c in planned["apps-a"]["changes"] if c["name"] == "moving")
    assert change["action"] == "failed" and f"live in bundle {HELD}" in change["message"]
    # the next pass still refuses it: the held bundle's record is back, but without it
    code, doc = apply(capsys, kube, root)
    assert_refused(doc, "apps-a", kube, ns)
    # once the freeze lifts, the move goes through
    for rel in freeze:
        (root / rel).unlink()
    code, doc = apply(capsys, kube, root)
    assert code == 0, doc
    assert value(kube, ns, "moving") == "v2"


@pytest.mark.parametrize("into", ["new", "renamed"])
def test_nor_when_it_moves_into_a_bundle_without_a_record(tmp_path, kube, capsys, into):
    root, ns = held_repo(tmp_path, kube, capsys, PAUSED)
    delete_record(kube, HELD)
    write_files(root, {"apps/h/app.yaml": cm("h", ns, "v1")})
    if into == "new":
        write_files(root, {"apps/n/app.yaml": cm("moving", ns, "v2")})
        taker = "apps-n"
    else:  # apps/a renamed to apps/b, taking the object along
        (root / "apps/a/app.yaml").unlink()
        (root / "apps/a").rmdir()
        write_files(root, {"apps/b/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2")})
        taker = "apps-b"
    code, doc = apply(capsys, kube, root)
    assert code != 0
    assert_refused(doc, taker, kube, ns)


def moving_is_refused(root: Path, kube, capsys, ns: str) -> None:
    """A commit moves the held bundle's `moving` into the open `apps-a`: that bundle is
    refused, and the object stays as it is live."""
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/app.yaml": cm("h", ns, "v1")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    assert_refused(doc, "apps-a", kube, ns)


def test_nor_when_its_record_is_edited(tmp_path, kube, capsys):
    """The record kept, the object's entry removed from it (`kubectl edit`)."""
    root, ns = held_repo(tmp_path, kube, capsys, PAUSED)
    state = kube.emulator.state
    with state.lock:
        for key in record_keys(kube, HELD):
            status = state.objects[key].obj["status"]
            status["objects"] = [o for o in status["objects"] if o["name"] != "moving"]
    moving_is_refused(root, kube, capsys, ns)


def test_nor_when_its_record_is_deleted_and_its_folder_emptied(tmp_path, kube, capsys):
    """Only the `PAUSE` file is left of the held bundle, nothing is on record: its objects
    are neither pruned nor taken over while the pause stands."""
    root, ns = held_repo(tmp_path, kube, capsys, PAUSED)
    delete_record(kube, HELD)
    (root / "apps/h/app.yaml").unlink()
    code, doc = apply(capsys, kube, root)
    assert value(kube, ns, "h") == "v1" and value(kube, ns, "moving") == "v1", doc
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    result = assert_refused(doc, "apps-a", kube, ns)
    assert "apps/h/PAUSE" in result["message"], result
    assert value(kube, ns, "h") == "v1"


def test_nor_when_its_records_folder_is_edited(tmp_path, kube, capsys):
    """The record kept, its folder edited to another (`kubectl edit`), the held bundle's
    folder emptied but for `PAUSE`: the pause still holds what the bundle has live."""
    root, ns = held_repo(tmp_path, kube, capsys, PAUSED)
    state = kube.emulator.state
    with state.lock:
        for key in record_keys(kube, HELD):
            state.objects[key].obj["spec"]["source"] = "apps/elsewhere"
    (root / "apps/h/app.yaml").unlink()
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    result = assert_refused(doc, "apps-a", kube, ns)
    assert "apps/h/PAUSE" in result["message"], result
    assert value(kube, ns, "h") == "v1"


@pytest.mark.parametrize("failing", ["list", "list and read"])
def test_a_takeover_whose_owner_cannot_be_listed_is_read_or_does_not_happen(
        tmp_path, kube, capsys, failing):
    """The API server fails the owner list: the object is read alone before its write, and
    refused; when that read fails too, it is not written (fail closed), naming it."""
    root, ns = held_repo(tmp_path, kube, capsys, PAUSED)
    delete_record(kube, HELD)
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/app.yaml": cm("h", ns, "v1")})
    collection = f"/api/v1/namespaces/{ns}/configmaps"

    def fault(request):
        if request.method == "GET" and (request.path == collection or (
                failing == "list and read" and request.path.startswith(collection))):
            return 500, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "message": "etcdserver: request timed out", "code": 500}
        return None

    kube.emulator.state.faults.append(fault)
    try:
        code, doc = apply(capsys, kube, root)
    finally:
        kube.emulator.state.faults.clear()
    assert code != 0
    if failing == "list":
        assert_refused(doc, "apps-a", kube, ns)
        return
    result = {b["name"]: b for b in doc["bundles"]}["apps-a"]
    assert result["failed"] and result["reason"] == "ReadFailed", result
    assert f"could not read ConfigMap {ns}/moving to check" in result["message"], result
    assert writes_of(kube, "moving") == []
    assert value(kube, ns, "moving") == "v1"


def object_reads(kube, ns: str) -> list[tuple[str, str, str]]:
    """The reads of the test namespace's objects: (path, label selector)."""
    return [(r.method, r.path, r.query.get("labelSelector", ""))
            for r in kube.emulator.state.requests
            if r.method == "GET" and f"/namespaces/{ns}/" in r.path]


def test_the_check_costs_no_request(tmp_path, kube, capsys):
    """With a bundle held, a cold apply and a pass that changes an object read each
    collection they write to once (the lists they make anyway), and a no-op pass reads
    none of the objects."""
    ns = kube.ns("rec")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1") + cm("b", ns, "v1"),
        "apps/h/app.yaml": cm("h", ns, "v1"),
        **PAUSED,
    })

    def lists_once() -> None:
        reads = object_reads(kube, ns)
        assert len(reads) == len({path for _, path, _ in reads}), reads
        assert all(not path.endswith(("/configmaps/a", "/configmaps/b")) for _, path, _ in reads)

    assert apply(capsys, kube, root)[0] == 0  # cold
    lists_once()
    assert apply(capsys, kube, root)[0] == 0  # no-op
    assert object_reads(kube, ns) == []
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v2") + cm("b", ns, "v2")})
    assert apply(capsys, kube, root)[0] == 0
    lists_once()
    assert value(kube, ns, "a") == "v2"


def labelled_cm(name: str, ns: str, data: str, bundle: str) -> str:
    return (f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
            f"  namespace: {ns}\n  labels: {{gitgate.io/bundle: {bundle}}}\n"
            f"data: {{value: '{data}'}}\n")


def test_nor_when_it_was_live_in_an_app_of_the_paused_source(tmp_path, kube, capsys):
    """The object was live in `apps-h/web`, an app of the paused source apps/h (by its
    `gitgate.io/bundle` label); that app's record is deleted and the object moved into an
    open bundle: the `PAUSE` of apps/h still holds it."""
    ns = kube.ns("rec")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1"),
        "apps/h/app.yaml": cm("h", ns, "v1") + labelled_cm("moving", ns, "v1", f"{HELD}/web"),
    })
    assert apply(capsys, kube, root)[0] == 0
    assert value(kube, ns, "moving") == "v1"
    write_files(root, PAUSED)
    assert apply(capsys, kube, root)[0] == 0
    delete_record(kube, f"{HELD}.web")
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/app.yaml": cm("h", ns, "v1")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    result = {b["name"]: b for b in doc["bundles"]}["apps-a"]
    assert result["failed"] and result["reason"] == "Frozen", result
    assert f"live in bundle {HELD}/web" in result["message"], result
    assert "apps/h/PAUSE" in result["message"], result
    assert writes_of(kube, "moving") == []
    assert value(kube, ns, "moving") == "v1"


def test_nor_when_an_earlier_release_wrote_it(tmp_path, kube, capsys):
    """An object an earlier release wrote carries no `gitgate.io/instance` label, and a held
    bundle writes nothing that would add it: its bundle label still holds it."""
    root, ns = held_repo(tmp_path, kube, capsys, PAUSED)
    state = kube.emulator.state
    with state.lock:
        for key, stored in state.objects.items():
            if key[1] == "configmaps" and key[3] in ("h", "moving") and key[2] == ns:
                stored.obj["metadata"]["labels"].pop("gitgate.io/instance")
    assert "gitgate.io/instance" not in kube.cluster.get(
        "v1", "ConfigMap", ns, "moving")["metadata"]["labels"]
    delete_record(kube, HELD)
    moving_is_refused(root, kube, capsys, ns)


def test_nor_by_a_bundle_named_as_a_long_names_label(tmp_path, kube, capsys):
    """A name too long for a label value is written shortened, ending in a hash; a bundle
    named that shortened value carries the same label, yet is not the held bundle."""
    ns = kube.ns("rec")
    folder = "apps/h-" + "x" * 60
    held, short = f"apps-h-{'x' * 60}", bundle_label_value(f"apps-h-{'x' * 60}")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        f"{folder}/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1"),
    })
    code, doc = apply(capsys, kube, root)
    assert code == 0, doc
    write_files(root, {f"{folder}/PAUSE": "incident\n"})
    assert apply(capsys, kube, root)[0] == 0
    for key in [k for k in kube.emulator.state.objects if k[1] == "bundles"]:
        kube.cluster.delete("gitgate.io/v1alpha1", "Bundle", key[2], key[3])
    write_files(root, {f"{folder}/app.yaml": cm("h", ns, "v1"),
                       f"{short}/app.yaml": cm("moving", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    result = {b["name"]: b for b in doc["bundles"]}[short]
    assert result["failed"] and result["reason"] == "Frozen", result
    assert f"live in bundle {held}" in result["message"], result
    assert writes_of(kube, "moving") == []
    assert value(kube, ns, "moving") == "v1"


def test_nor_when_a_long_named_bundles_folder_is_emptied(tmp_path, kube, capsys):
    """A name too long for a label value: its objects' label is the shortened name, and the
    `PAUSE` left in its emptied folder still holds them."""
    ns = kube.ns("rec")
    folder = "apps/h-" + "x" * 60
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1"),
        f"{folder}/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, {f"{folder}/PAUSE": "incident\n"})
    assert apply(capsys, kube, root)[0] == 0
    delete_record(kube, f"apps-h-{'x' * 60}")
    (root / f"{folder}/app.yaml").unlink()
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    result = {b["name"]: b for b in doc["bundles"]}["apps-a"]
    assert result["failed"] and result["reason"] == "Frozen", result
    assert f"{folder}/PAUSE" in result["message"], result
    assert writes_of(kube, "moving") == []
    assert value(kube, ns, "moving") == "v1"


@pytest.mark.parametrize("record", ["kept", "deleted"])
def test_nor_by_a_bundle_approved_under_the_same_gate(tmp_path, kube, capsys, record):
    """One gate holds both bundles; its approval of apps/a's new content, which takes the
    object over, lets apps/a through but not the object apps/h has live."""
    root, ns = held_repo(tmp_path, kube, capsys, {})
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/app.yaml": cm("h", ns, "v1")})
    capsys.readouterr()
    main(["plan", str(root), "-o", "json"])
    digest = {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}[
        "apps-a"]["digest"]
    write_files(root, gate(f"{{bundles: ['apps-*'], reason: freeze, approve: "
                           f"{{bundle: apps-a, digest: '{digest}'}}}}"))
    if record == "deleted":
        delete_record(kube, HELD)
    code, doc = apply(capsys, kube, root)
    assert code != 0
    assert {b["name"]: b for b in doc["bundles"]}[HELD]["verdict"] == "held"
    assert_refused(doc, "apps-a", kube, ns)


@pytest.mark.parametrize("spec", [f"{{bundles: [{HELD}], reason: freeze}}",
                                  "{bundles: ['apps-h*'], action: suspend, reason: freeze}"],
                         ids=["hold", "suspend"])
def test_nor_when_the_gated_bundle_left_git_with_its_record(tmp_path, kube, capsys, spec):
    """Only a gate naming the bundle is left: its folder is gone from Git, its record from
    the API server; the object it has live is still held by the gate."""
    root, ns = held_repo(tmp_path, kube, capsys, gate(spec))
    delete_record(kube, HELD)
    (root / "apps/h/app.yaml").unlink()
    (root / "apps/h").rmdir()
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    result = assert_refused(doc, "apps-a", kube, ns)
    assert "gates/h.yaml" in result["message"], result
    assert value(kube, ns, "h") == "v1"


@pytest.mark.parametrize("freeze", [PAUSED, SUSPENDED], ids=["held", "suspended"])
def test_nor_when_the_frozen_bundle_fails_to_render(tmp_path, kube, capsys, freeze):
    """The same commit that moves the object breaks the frozen bundle's manifests: the
    bundle fails, and its freeze still holds what it has live."""
    root, ns = held_repo(tmp_path, kube, capsys, freeze)
    delete_record(kube, HELD)
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/app.yaml": cm("h", ns, "v1") + "---\nkind: [\n"})
    code, doc = apply(capsys, kube, root)
    assert code != 0
    assert {b["name"]: b for b in doc["bundles"]}[HELD]["verdict"] == "failed", doc
    assert_refused(doc, "apps-a", kube, ns)


@pytest.mark.parametrize("folder", ["kept", pytest.param("emptied", marks=pytest.mark.xfail(
    strict=True, reason="open: with its record deleted and its folder emptied, only the "
    "labels of its live objects say the held bundle lives in the Namespace, and a prune "
    "reads no object inside what it deletes"))])
def test_nor_is_the_namespace_it_lives_in_pruned(tmp_path, kube, capsys, folder):
    """The Namespace the held bundle's objects live in leaves Git after its record is
    deleted (and its folder emptied, but for `PAUSE`): deleting it would delete them."""
    ns, other = kube.ns("rec"), kube.ns("rec2")
    namespace = "---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {}}}\n"
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": namespace.format(ns) + namespace.format(other),
        "apps/a/app.yaml": "".join(cm(f"a{i}", other, "v1") for i in range(6)),
        "apps/h/app.yaml": cm("h", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, PAUSED)
    assert apply(capsys, kube, root)[0] == 0
    delete_record(kube, HELD)
    if folder == "emptied":
        (root / "apps/h/app.yaml").unlink()
    write_files(root, {"ns/ns.yaml": namespace.format(other)})
    code, doc = apply(capsys, kube, root)
    assert not any("would delete" in b["message"] for b in doc["bundles"]), doc
    deletes = [r.path for r in kube.emulator.state.requests
               if r.method == "DELETE" and r.path.endswith(f"/namespaces/{ns}")]
    assert deletes == [], doc
    assert kube.cluster.get("v1", "Namespace", "", ns) is not None
    assert value(kube, ns, "h") == "v1"
