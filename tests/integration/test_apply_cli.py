"""`gitgate apply`, `plan --kubeconfig` and `status` from the command line, over HTTP."""

from __future__ import annotations

import json

import pytest

from gitgate.cli import main
from gitgate.karmada.policy import policy_name
from tests.conftest import write_files
from tests.support.hostile import gitgate
from tests.support.manifests import crd_yaml
from tests.support.objects import shown
from tests.support.records import record

pytestmark = pytest.mark.integration


@pytest.fixture
def small_repo(tmp_path, kube):
    ns = kube.ns("shop")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "base/bundle.yaml": f"name: {kube.run_id}-base\n",
        "base/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "app/bundle.yaml": f"name: {kube.run_id}-app\ndependsOn: [{kube.run_id}-base]\n",
        "app/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, "
                       f"namespace: {ns}}}\ndata: {{mode: one}}\n---\napiVersion: v1\n"
                       f"kind: Secret\nmetadata: {{name: creds, namespace: {ns}}}\n"
                       "stringData: {password: hunter2-do-not-print}\n",
    })
    return root, ns


def run(capsys, *argv) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_apply_then_status_then_live_plan(small_repo, kube, tools, capsys):
    root, ns = small_repo
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    code, doc = run(capsys, "apply", str(root), *flags, "-o", "json")
    assert code == 0 and doc["ok"]
    applied = {b["name"]: [shown(r) for r in b["applied"]] for b in doc["bundles"]}
    assert f"ConfigMap {ns}/settings" in applied[f"{kube.run_id}-app"]

    code, status = run(capsys, "status", *flags, "-o", "json")
    assert code == 0
    assert {b["name"]: b["verdict"] for b in status["bundles"]} == {
        f"{kube.run_id}-app": "apply", f"{kube.run_id}-base": "apply"}

    write_files(root, {"app/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: "
                       f"settings, namespace: {ns}}}\ndata: {{mode: two}}\n---\napiVersion: v1\n"
                       f"kind: Secret\nmetadata: {{name: creds, namespace: {ns}}}\n"
                       "stringData: {password: changed-secret-value}\n"})
    capsys.readouterr()
    code = main(["plan", str(root), *flags, "-o", "json"])
    raw = capsys.readouterr().out
    assert "changed-secret-value" not in raw and "hunter2" not in raw
    plan = {b["name"]: b for b in json.loads(raw)["bundles"]}
    changes = {c["object"]: c for c in plan[f"{kube.run_id}-app"]["changes"]}
    assert changes[f"ConfigMap {ns}/settings"]["action"] == "configured"
    assert changes[f"ConfigMap {ns}/settings"]["fields"] == [".data.mode"]
    assert changes[f"Secret {ns}/creds"]["action"] == "configured"
    generated = policy_name(f"{kube.run_id}-app", kube.run_id)
    assert changes[f"PropagationPolicy.policy.karmada.io {ns}/{generated}"][
        "action"] == "unchanged"
    assert code == 0
    kube.cluster.forget()
    code, doc = run(capsys, "apply", str(root), *flags, "--dry-run", "-o", "json")
    assert code == 0 and kube.cluster.writes() == []


def test_apply_exit_status_is_1_when_a_bundle_fails(small_repo, kube, tools, capsys):
    root, ns = small_repo
    write_files(root, {"bad/bundle.yaml": f"name: {kube.run_id}-bad\n",
                       "bad/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                      f"  name: Not_Valid\n  namespace: {ns}\n"})
    code, doc = run(capsys, "apply", str(root), "--kubeconfig", kube.kubeconfig,
                    "--instance", kube.run_id, "-o", "json")
    assert code == 1
    bundles = {b["name"]: b for b in doc["bundles"]}
    bad = bundles[f"{kube.run_id}-bad"]
    # refused before anything is sent: the name is no DNS-1123 subdomain (issue 24)
    assert bad["failed"] and bad["reason"] == "RenderFailed" and "Not_Valid" in bad["message"]
    assert "DNS-1123" in bad["message"]
    assert not bundles[f"{kube.run_id}-app"]["failed"]


def test_live_plan_shows_create_prune_and_held(small_repo, kube, tools, capsys):
    root, ns = small_repo
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert main(["apply", str(root), *flags]) == 0
    write_files(root, {
        "app/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: fresh, "
                       f"namespace: {ns}}}\ndata: {{mode: new}}\n",
        "gates/base.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: b}\n"
                           f"spec: {{bundles: [{kube.run_id}-base], reason: hold base}}\n"})
    code, doc = run(capsys, "plan", str(root), *flags, "-o", "json")
    bundles = {b["name"]: {c["object"]: c["action"] for c in b["changes"]}
               for b in doc["bundles"]}
    app = bundles[f"{kube.run_id}-app"]
    assert app[f"ConfigMap {ns}/fresh"] == "created"
    assert app[f"ConfigMap {ns}/settings"] == "deleted"
    assert app[f"Secret {ns}/creds"] == "deleted"
    assert set(bundles[f"{kube.run_id}-base"].values()) == {"held"}
    assert code == 0


def test_live_plan_shows_the_deletes_of_a_removed_bundle_and_honours_prune(small_repo, kube,
                                                                           tools, capsys):
    """The prune decision `plan --kubeconfig` prints is the one `apply` carries out: a bundle
    removed from Git is deleted object by object, an object marked `gitgate.io/prune:
    disabled` is skipped, and the mass-prune brake skips every delete until allowed."""
    root, ns = small_repo
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    gone = f"{kube.run_id}-gone"
    write_files(root, {
        "gone/bundle.yaml": f"name: {gone}\ndependsOn: [{kube.run_id}-base]\n",
        "gone/cm.yaml": "".join(
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}"
            f"{extra}}}\n" for name, extra in (
                ("g1", ""), ("g2", ", annotations: {gitgate.io/prune: disabled}")))})
    assert run(capsys, "apply", str(root), *flags, "-o", "json")[0] == 0

    for rel in ("gone/bundle.yaml", "gone/cm.yaml"):
        (root / rel).unlink()
    code, doc = run(capsys, "plan", str(root), *flags, "-o", "json")
    assert code == 0
    [removed] = doc["removedBundles"]
    actions = {c["name"]: c["action"] for c in removed["changes"]}
    assert removed["name"] == gone
    assert actions["g1"] == "deleted" and actions["g2"] == "skipped"
    assert actions[policy_name(gone, kube.run_id)] == "deleted"  # its generated policy
    code, result = run(capsys, "apply", str(root), *flags, "-o", "json")
    [done] = [b for b in result["bundles"] if b["name"] == gone]
    assert sorted(map(shown, done["pruned"])) == sorted(
        [f"ConfigMap {ns}/g1",
         f"PropagationPolicy.policy.karmada.io {ns}/{policy_name(gone, kube.run_id)}"])
    assert [shown(r) for r in done["kept"]] == [f"ConfigMap {ns}/g2"]

    # the brake: removing the app too would delete more than half of what gitgate manages
    for rel in ("app/bundle.yaml", "app/cm.yaml"):
        (root / rel).unlink()
    code, doc = run(capsys, "plan", str(root), *flags, "-o", "json")
    [removed] = doc["removedBundles"]
    assert {c["action"] for c in removed["changes"]} == {"skipped"}
    assert all("PruneBlocked" in c["message"] for c in removed["changes"])
    code, doc = run(capsys, "plan", str(root), *flags, "-o", "json", "--allow-mass-prune")
    [removed] = doc["removedBundles"]
    assert {c["action"] for c in removed["changes"]} == {"deleted"}



@pytest.mark.parametrize("command", ["plan", "render", "apply"])
def test_a_bundle_glob_that_matches_nothing_is_an_error_naming_the_closest(
        command, small_repo, kube, tools):
    """Issue 28, item 6: `apply . --bundle shop/cart` printed ok and exited 0, applying
    nothing. A typo is an error naming the closest bundles, before anything is written; the
    real CLI, in a subprocess."""
    root, _ = small_repo
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id] \
        if command == "apply" else []
    typo = f"{kube.run_id}-ap"
    done = gitgate(command, str(root), "--bundle", typo, *flags)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (f"--bundle '{typo}' matches no bundle; closest: {kube.run_id}-app"
            in done.stderr), done.stderr
    assert "Traceback" not in done.stderr
    if command == "apply":
        assert record(kube.cluster, f"{kube.run_id}-app", kube.run_id) is None
    assert gitgate(command, str(root), "--bundle", f"{kube.run_id}-*", *flags).returncode == 0


CRD = crd_yaml("example.com", "Widget")


def test_a_dry_run_is_labelled_and_a_first_deploy_does_not_fail_on_what_it_creates(
        tmp_path, kube, tools):
    """Issue 28, item 7: `apply --dry-run` looked like a real apply, and on a first deploy
    failed every bundle whose Namespace (or CRD: the sibling case) the same pass creates."""
    ns = kube.ns("dry")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "base/bundle.yaml": f"name: {kube.run_id}-base\n",
        "base/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "base/crd.yaml": CRD,
        "app/bundle.yaml": f"name: {kube.run_id}-app\ndependsOn: [{kube.run_id}-base]\n",
        "app/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, "
                       f"namespace: {ns}}}\ndata: {{mode: one}}\n---\n"
                       f"apiVersion: example.com/v1\nkind: Widget\n"
                       f"metadata: {{name: w, namespace: {ns}}}\n"})
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    as_json = gitgate("apply", str(root), "--dry-run", "-o", "json", *flags)
    assert as_json.returncode == 0, as_json.stdout + as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["dryRun"] is True and doc["ok"] is True
    app = next(b for b in doc["bundles"] if b["name"] == f"{kube.run_id}-app")
    assert not app["failed"]
    assert {f"ConfigMap {ns}/settings",
            f"Widget.example.com {ns}/w"} <= set(map(shown, app["applied"]))
    assert "not checked by the server" in app["message"]
    table = gitgate("apply", str(root), "--dry-run", *flags)
    assert "(server dry run: nothing was written): ok" in table.stdout.splitlines()[0]
    assert kube.cluster.get("v1", "Namespace", "", ns) is None  # nothing was written
    real = gitgate("apply", str(root), "-o", "json", *flags)
    assert json.loads(real.stdout)["dryRun"] is False
