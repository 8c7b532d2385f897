"""A shared repo cannot take over (issue 24, classes 1-4): a folder reads no file outside the
repo through dot-folders or the checkout's .git, claims no other bundle's identity, writes none
of gitgate's or Karmada's own state, and turns no name into another object's URL. Each case
runs the real CLI in a subprocess; the API side is the emulator over HTTP, and what the attacker
aimed at is checked to be intact afterwards."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.hostile import CHART as CHART_FILES
from tests.support.hostile import (
    OUTSIDE,
    assert_clean,
    assert_one_broken,
    chart,
    gitgate,
    growing_template,
    render,
    rendered_names,
    repo,
)
from tests.support.objects import shown

pytestmark = pytest.mark.integration


SECRET_TEXT = "hunter2-super-secret-value"


def cm(name: str, namespace: str = "shop", extra: str = "") -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {json.dumps(name)}, "
            f"namespace: {namespace}{extra}}}\ndata: {{k: v}}\n")


SHOP = {"shop/cm.yaml": cm("shop-a"), "shop/bundle.yaml": "namespace: shop\n",
        "shop/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"}


# ---------------------------------------------------------------- 1. links through dot-folders
def files_get(path: str) -> str:
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
            f"data: {{leak: {{{{ .Files.Get {json.dumps(path)} | quote }}}}}}\n")


def test_a_linked_dot_folder_cannot_carry_a_host_file_into_a_chart(tmp_path, outside, tools):
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": files_get(".k/secret.txt")}))
    os.symlink(outside, root / "app" / ".k")
    assert_one_broken(root, "app/.k", "points outside the repo")


def test_a_link_inside_a_real_dot_folder_is_seen(tmp_path, outside, tools):
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": files_get(".d/secret.txt"),
                                          ".d/keep.txt": "x\n"}))
    os.symlink(outside / "secret.txt", root / "app" / ".d" / "secret.txt")
    assert_one_broken(root, "app/.d/secret.txt", "points outside the repo")


def test_files_glob_over_a_linked_dot_folder_is_refused(tmp_path, outside, tools):
    template = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
                "data:\n{{ (.Files.Glob \".g/*\").AsConfig | indent 2 }}\n")
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": template}))
    os.symlink(outside, root / "app" / ".g")
    assert_one_broken(root, "app/.g", "points outside the repo")


def test_a_kustomize_resource_through_a_dot_link_is_refused(tmp_path, outside, tools):
    (outside / "cm.yaml").write_text(cm("leak", "default") .replace("k: v", f"k: {OUTSIDE}"))
    root = repo(tmp_path, {"app/kustomization.yaml": "resources: [.b/cm.yaml]\n"})
    os.symlink(outside, root / "app" / ".b")
    assert_one_broken(root, "app/.b", "points outside the repo")


def test_a_link_into_the_checkouts_git_folder_is_outside_the_repo(tmp_path, tools):
    """The loop's checkout keeps its remote (and any credentials in its URL) in .git/config."""
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": files_get("gitcfg")}))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[remote]\n url = https://x:{OUTSIDE}@h/r\n")
    os.symlink(root / ".git" / "config", root / "app" / "gitcfg")
    assert_one_broken(root, "app/gitcfg", "points outside the repo")


def test_a_folder_link_to_the_git_folder_is_outside_the_repo(tmp_path, tools):
    root = repo(tmp_path, {"app/kustomization.yaml": "resources: [g/leak.yaml]\n"})
    (root / ".git").mkdir()
    (root / ".git" / "leak.yaml").write_text(cm("leak", "default"))
    os.symlink(root / ".git", root / "app" / "g")
    assert_one_broken(root, "app/g", "points outside the repo")


@pytest.mark.parametrize("where", ["gates/.drafts/freeze.yaml", "gates/.old/x/freeze.yml"])
def test_a_gate_in_a_hidden_folder_holds_everything(tmp_path, tools, where):
    gate = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: f}\n"
            "spec: {bundles: ['nothing'], reason: r}\n")
    root = repo(tmp_path, {where: gate, "gates/.gitkeep": ""})
    result = gitgate("plan", str(root), "-o", "json")
    plan = json.loads(result.stdout)
    assert {b["verdict"] for b in plan["bundles"]} == {"held"}, plan
    assert where in result.stdout and "hidden folder" in result.stdout


# ---------------------------------------------------------------- 2. forged bundle identity
def test_a_label_cannot_move_an_object_into_another_bundle(tmp_path, tools):
    root = repo(tmp_path, {**SHOP, "evil/cm.yaml": cm(
        "evil", extra=", labels: {gitgate.io/bundle: shop}")})
    document = assert_one_broken(root, "evil", "gitgate.io/bundle", "shop")
    assert "shop-a" in rendered_names(document) and "evil" not in rendered_names(document)


def test_a_label_cannot_reach_an_app_of_another_split_source(tmp_path, tools):
    root = repo(tmp_path, {**SHOP, "evil/cm.yaml": cm(
        "evil", extra=", labels: {gitgate.io/bundle: shop_carts}")})
    assert_one_broken(root, "evil", "gitgate.io/bundle")


def test_two_folders_claiming_one_name_both_fail_naming_each_other(tmp_path, tools):
    root = repo(tmp_path, {**SHOP, "evil/cm.yaml": cm("evil"),
                           "evil/bundle.yaml": "name: shop\n"})
    result, document = render(root)
    assert result.returncode == 1
    by_file = {e["file"]: e["message"] for e in document["errors"]}
    assert "evil" in by_file["shop/bundle.yaml"] and "shop" in by_file["evil/bundle.yaml"]
    assert "good" in rendered_names(document) and "evil" not in rendered_names(document)


def test_a_dotted_name_cannot_take_over_a_split_apps_state(tmp_path, tools):
    """`shop.carts` and `shop/carts` would share an inventory and a policy name."""
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: carts}\nspec:\n"
                  "  selector: {matchLabels: {app: carts}}\n  template:\n"
                  "    metadata: {labels: {app: carts}}\n"
                  "    spec: {containers: [{name: c, image: nginx}]}\n")
    root = repo(tmp_path, {"shop/deploy.yaml": deployment,
                           "shop/bundle.yaml": "namespace: shop\nsplit: app\n",
                           "evil/cm.yaml": cm("evil"), "evil/bundle.yaml": "name: shop.carts\n"})
    plan = json.loads(gitgate("plan", str(root), "-o", "json").stdout)
    verdicts = {b["name"]: b["verdict"] for b in plan["bundles"]}
    claimed = [name for name in verdicts if name in ("shop/carts", "shop.carts")]
    assert len(claimed) == 1 and verdicts[claimed[0]] == "failed", verdicts
    assert verdicts["good"] == "apply", verdicts


# ---------------------------------------------------------------- 3. gitgate's own state
@pytest.mark.parametrize(("name", "files", "words"), [
    ("an inventory-shaped ConfigMap", {"evil/cm.yaml": cm("gitgate-shop", "gitgate-system")},
     ["gitgate-system"]),
    ("a ConfigMap with the inventory labels elsewhere", {"evil/cm.yaml": cm(
        "x", "default", ", labels: {gitgate.io/inventory: 'true', gitgate.io/instance: default}")},
     ["is gitgate's to write"]),
    ("gitgate's namespace", {"evil/ns.yaml": "apiVersion: v1\nkind: Namespace\n"
                                             "metadata: {name: gitgate-system}\n"},
     ["gitgate-system"]),
    ("gitgate's Lease", {"evil/lease.yaml": "apiVersion: coordination.k8s.io/v1\nkind: Lease\n"
                                            "metadata: {name: gitgate-default, namespace: "
                                            "gitgate-system}\n"}, ["gitgate-system"]),
    ("a policy named like a generated one", {"evil/pp.yaml": (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: gitgate-shop, namespace: shop}\n"
        "spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]}\n")}, ["gitgate-"]),
    ("a bundle whose namespace is gitgate's", {"evil/cm.yaml": cm("x").replace(
        "namespace: shop", ""), "evil/bundle.yaml": "namespace: gitgate-system\n"},
     ["gitgate-system"]),
    ("a Work in an execution namespace", {"evil/work.yaml": (
        "apiVersion: work.karmada.io/v1alpha1\nkind: Work\nmetadata: {name: w, namespace: "
        "karmada-es-member2}\nspec: {workload: {manifests: []}}\n")}, ["execution namespace"]),
    ("a ResourceBinding", {"evil/rb.yaml": (
        "apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {name: rb, "
        "namespace: shop}\nspec: {clusters: [{name: member2}]}\n")}, ["dispatch record"]),
    ("a CRD redefining Karmada's API", {"evil/crd.yaml": (
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: propagationpolicies.policy.karmada.io}\n"
        "spec: {group: policy.karmada.io, scope: Namespaced, names: {kind: PropagationPolicy, "
        "plural: propagationpolicies}, versions: []}\n")}, ["Karmada's own"]),
    ("a forged Bundle record", {"evil/record.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Bundle\nmetadata: {name: shop, namespace: shop}\n"
        "spec: {bundle: shop}\n")}, ["gitgate's own (its Bundle records)"]),
    ("a CRD redefining gitgate's records", {"evil/crd.yaml": (
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: bundles.gitgate.io}\n"
        "spec: {group: gitgate.io, scope: Namespaced, names: {kind: Bundle, "
        "plural: bundles}, versions: []}\n")}, ["Gitgate's own"]),
    ("a gitgate.io key of gitgate's own", {"evil/cm.yaml": cm(
        "x", "default", ", annotations: {gitgate.io/inventory-of: shop}")},
     ["gitgate.io/inventory-of"]),
])
def test_a_repo_object_cannot_be_gitgates_or_karmadas_own_state(tmp_path, tools, name, files,
                                                                   words):
    root = repo(tmp_path, {**SHOP, **files})
    document = assert_one_broken(root, "evil", *words)
    assert "shop-a" in rendered_names(document), name


# ---------------------------------------------------------------- 4. names become URL paths
@pytest.mark.parametrize("name", [
    "../../shop/configmaps/shop-a", "../../victim", "..", "a/b", "a%2Fb", "Shop-A", "a\nb"])
def test_an_object_name_is_never_a_path(tmp_path, tools, name):
    root = repo(tmp_path, {**SHOP, "evil/cm.yaml": cm(name, "default")})
    assert_one_broken(root, "evil/cm.yaml", "metadata.name")


@pytest.mark.parametrize("namespace", ["../victim", "shop/configmaps", "a%2F..", "Shop"])
def test_an_object_namespace_is_never_a_path(tmp_path, tools, namespace):
    root = repo(tmp_path, {**SHOP, "evil/cm.yaml": cm("x", json.dumps(namespace))})
    assert_one_broken(root, "evil/cm.yaml", "metadata.namespace")


@pytest.mark.parametrize("api_version", ["../../api/v1", "v1/../..", "apps/v1/x"])
def test_an_api_version_is_never_a_path(tmp_path, tools, api_version):
    root = repo(tmp_path, {**SHOP, "evil/cm.yaml": cm("x", "default").replace(
        "apiVersion: v1", f"apiVersion: {json.dumps(api_version)}")})
    assert_one_broken(root, "evil/cm.yaml", "apiVersion")


def test_a_rendered_name_from_a_chart_is_checked_too(tmp_path, tools):
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '../../victim'}\n")}))
    assert_one_broken(root, "app", "metadata.name")


# ---------------------------------------------------------------- the API side, end to end
def _objects(emulator) -> dict[tuple[str, str, str], dict]:
    return {(key[1], key[2], key[3]): stored.obj for key, stored in emulator.state.objects.items()}


def _apply(root: Path, kubeconfig: str) -> dict:
    result = gitgate("apply", str(root), "--kubeconfig", kubeconfig, "-o", "json")
    assert result.returncode in (0, 1), result.stderr[-2000:]
    assert_clean(result.stdout, result.stderr)
    return json.loads(result.stdout)


def _bundle(result: dict, name: str) -> dict:
    """A bundle of an apply result (the corpus's `good` source has no namespace here)."""
    return next(b for b in result["bundles"] if b["name"] == name)


def test_no_repo_object_makes_gitgate_delete_another_bundles_objects(tmp_path, emulator,
                                                                      tools):
    """The attacks of classes 2-4 against a live API: after each pass and after the attacker's
    folder is removed again, shop's object and namespace are still there."""
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    root = repo(tmp_path, SHOP)
    assert _bundle(_apply(root, kubeconfig), "shop")["applied"]
    forged_inventory = cm("gitgate-evil", "gitgate-system", ", labels: {gitgate.io/inventory: "
                          "'true', gitgate.io/instance: default}").replace("data: {k: v}", (
                              "data: {bundle: evil, source: evil, objects: '[{\"apiVersion\": "
                              "\"v1\", \"kind\": \"Namespace\", \"name\": \"shop\"}]'}"))
    forged_bundle = ("apiVersion: gitgate.io/v1alpha1\nkind: Bundle\nmetadata: {{name: evil, "
                     "namespace: {ns}, labels: {{gitgate.io/instance: default}}}}\nspec: "
                     "{{bundle: evil, source: evil}}\nstatus: {{objects: [{{apiVersion: v1, "
                     "kind: Namespace, name: shop, namespace: ''}}]}}\n")
    attacks = [
        {"evil/cm.yaml": forged_inventory},
        {"evil/bundle.yaml": "namespace: gitgate-system\n",
         "evil/record.yaml": forged_bundle.format(ns="gitgate-system")},
        {"evil/record.yaml": forged_bundle.format(ns="default")},
        {"evil/cm.yaml": cm("../../shop/configmaps/shop-a", "default")},
        {"evil/cm.yaml": cm("shop-a", extra=", labels: {gitgate.io/bundle: shop}")},
        {"evil/cm.yaml": cm("e", "default"), "evil/bundle.yaml": "name: shop\n"},
        {"evil/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: gitgate-system}\n"},
    ]
    for attack in attacks:
        attacked = repo(tmp_path, {**SHOP, **attack})
        _apply(attacked, kubeconfig)
        for file in attack:
            (attacked / file).unlink()
        _apply(attacked, kubeconfig)
        objects = _objects(emulator)
        assert ("configmaps", "shop", "shop-a") in objects, attack
        assert ("namespaces", "", "shop") in objects, attack
        assert ("namespaces", "", "gitgate-system") in objects, attack
        assert ("configmaps", "gitgate-system", "gitgate-evil") not in objects, attack
        assert not [o for o in objects if o[0] == "bundles" and o[2] == "evil"], attack


def test_prune_leaves_an_object_that_is_no_longer_this_bundles(tmp_path, emulator, tools):
    """Defense in depth: an inventory entry (written before these checks, say) whose live
    object carries another bundle's mark, or is gitgate's own, is never deleted."""
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    root = repo(tmp_path, {**SHOP, "other/cm.yaml": cm("other-a"),
                           "other/bundle.yaml": "namespace: shop\n"})
    assert _bundle(_apply(root, kubeconfig), "other")["applied"]
    inventory = emulator.state.objects[("gitgate.io", "bundles", "gitgate-system", "other")]
    inventory.obj["status"]["objects"] += [
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "shop-a",
         "hash": "x"},
        {"apiVersion": "v1", "kind": "Namespace", "namespace": "", "name": "gitgate-system",
         "hash": "x"}]
    (root / "other" / "cm.yaml").unlink()
    (root / "other" / "bundle.yaml").unlink()
    result = _apply(root, kubeconfig)
    other = _bundle(result, "other")
    assert [shown(r) for r in other["pruned"]] == ["ConfigMap shop/other-a"], other
    assert sorted(map(shown, other["notOwned"])) == ["ConfigMap shop/shop-a",
                                                     "Namespace gitgate-system"]
    objects = _objects(emulator)
    assert ("configmaps", "shop", "shop-a") in objects
    assert ("namespaces", "", "gitgate-system") in objects
    assert ("configmaps", "shop", "other-a") not in objects


# ---------------------------------------------------------------- 7. claims in gate files
DECOY = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata:\n  name: decoy\n"
         "  annotations: {gitgate.io/paused-for: shop}\n"
         "spec: {bundles: [nothing-here], reason: decoy}\n")
FREEZE = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata:\n  name: freeze\n"
          "  annotations: {gitgate.io/paused-for: shop}\n"
          "spec: {bundles: ['*'], reason: company-wide freeze}\n")


def _committed(tmp_path: Path, files: dict[str, str]) -> Path:
    from tests.conftest import committed_repo

    root = repo(tmp_path, {**SHOP, **files})
    committed_repo(root)
    return root


def _verdicts(root: Path) -> dict[str, str]:
    plan = json.loads(gitgate("plan", str(root), "-o", "json").stdout)
    return {b["name"]: b["verdict"] for b in plan["bundles"]}


def test_a_decoy_gate_claiming_a_selector_does_not_stop_a_pause(tmp_path, tools):
    root = _committed(tmp_path, {"gates/decoy.yaml": DECOY})
    result = gitgate("pause", "shop", "--reason", "INC-1", "--for", "1h", "--repo", str(root))
    assert result.returncode == 0, result.stderr
    assert "already paused" not in result.stdout + result.stderr
    assert _verdicts(root)["shop"] == "held"


def test_resume_never_deletes_a_broad_freeze_that_claims_the_selector(tmp_path, tools):
    root = _committed(tmp_path, {"gates/freeze.yaml": FREEZE})
    result = gitgate("resume", "shop", "--repo", str(root))
    assert (root / "gates" / "freeze.yaml").exists()
    assert "freeze" in result.stdout + result.stderr
    assert set(_verdicts(root).values()) == {"held"}


def test_resume_still_lifts_the_gate_pause_wrote(tmp_path, tools):
    root = _committed(tmp_path, {"gates/.gitkeep": ""})
    assert gitgate("pause", "shop", "--reason", "INC-2", "--repo", str(root)).returncode == 0
    assert _verdicts(root)["shop"] == "held"
    again = gitgate("pause", "shop", "--reason", "INC-2", "--repo", str(root))
    assert "already paused" in again.stdout + again.stderr
    assert gitgate("resume", "shop", "--repo", str(root)).returncode == 0
    assert _verdicts(root)["shop"] == "apply"


@pytest.mark.parametrize("selector", ["shop,team=x", "team=x,shop", ",", "=x", "a\nb"])
def test_a_malformed_selector_is_a_clear_error(tmp_path, tools, selector):
    root = _committed(tmp_path, {})
    for command in (["pause", selector, "--reason", "r"], ["resume", selector]):
        result = gitgate(*command, "--repo", str(root))
        assert result.returncode == 2 and "selector" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- 9. --push sends only the gate
def test_push_never_sends_a_local_commit_along_with_the_gate(tmp_path, tools):
    import git

    root = _committed(tmp_path, {"gates/.gitkeep": ""})
    local = git.Repo(root)
    remote = git.Repo.init(tmp_path / "origin.git", bare=True, initial_branch="main")
    local.create_remote("origin", remote.working_dir)
    local.git.push("origin", "main")
    (root / "shop" / "wip.yaml").write_text(cm("wip"))
    local.git.add("-A")
    local.git.commit("-m", "WIP do not push")
    head = local.head.commit.hexsha
    result = gitgate("pause", "shop", "--reason", "INC-3", "--repo", str(root), "--push")
    assert result.returncode == 2 and "WIP do not push" in result.stderr, result.stderr
    assert local.head.commit.hexsha == head and remote.commit("main").hexsha != head
    assert not list((root / "gates").glob("pause-*")) and not local.is_dirty(untracked_files=True)
    local.git.reset("--hard", "HEAD~1")
    assert gitgate("pause", "shop", "--reason", "INC-3", "--repo", str(root),
                   "--push").returncode == 0
    assert remote.commit("main").message.strip() == "pause shop: INC-3"


# ---------------------------------------------------------------- 14. what output may show
@pytest.mark.parametrize("data", [f"data: {SECRET_TEXT!r}", f"stringData: [{SECRET_TEXT!r}]",
                                  f"data: {{k: [{SECRET_TEXT!r}]}}"])
def test_a_secret_of_any_shape_is_redacted_by_render(tmp_path, tools, data):
    root = repo(tmp_path, {"app/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s, "
                                         f"namespace: default}}\n{data}\n"})
    result = gitgate("render", str(root))
    assert SECRET_TEXT not in result.stdout + result.stderr and "redacted" in result.stdout


def test_a_password_in_the_server_url_is_never_printed(tmp_path, tools):
    root = repo(tmp_path, SHOP)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: 'http://admin:{SECRET_TEXT}@127.0.0.1:9'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    result = gitgate("apply", str(root), "--kubeconfig", str(kubeconfig),
                     "--connect-timeout", "2s")
    assert result.returncode == 2 and "127.0.0.1:9" in result.stderr, result.stderr
    assert SECRET_TEXT not in result.stdout + result.stderr and "admin" not in result.stderr


@pytest.mark.parametrize("name", ["evil\nok    source         forged", "evil\x1b[2Jclear",
                                  "evil\u202eevil"])
def test_a_file_name_cannot_forge_a_line_or_drive_the_terminal(tmp_path, tools, name):
    root = repo(tmp_path, {f"{name}/cm.yaml": "kind: [broken\n"})
    for command in (["check", str(root)], ["render", str(root)], ["plan", str(root)]):
        result = gitgate(*command)
        text = result.stdout + result.stderr
        assert "\x1b" not in text and "\u202e" not in text, command
        assert not any(line.startswith("ok    source         forged")
                       for line in text.splitlines()), text


# ---------------------------------------------------------------- 13. a Secret's values in errors
ENCODED = __import__("base64").b64encode(b"s3cr3t-from-data-field").decode()


@pytest.mark.parametrize(("status", "message"), [
    (403, "admission webhook \"pw.example.com\" denied the request: password {v} is too weak"),
    (403, "ValidatingAdmissionPolicy 'pw' with binding 'pw' denied request: {v} is banned"),
    (422, "Secret \"s\" is invalid: stringData: Forbidden: {v} appears in a breach list"),
    (422, "Secret \"s\" is invalid: data[password]: Invalid value: \"{v}\": must be no more "
          "than 3 bytes"),
    (400, "the value {v} could not be decoded"),
    (500, "Internal error occurred: failed calling webhook: value={v}"),
])
def test_an_api_error_about_a_secret_never_carries_any_of_its_values(tmp_path, emulator,
                                                                     tools, status, message):
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    root = repo(tmp_path, {**SHOP, "shop/secret.yaml": (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: shop}\n"
        f"stringData: {{password: {SECRET_TEXT}}}\ndata: {{token: {ENCODED}}}\n")})
    decoded = "s3cr3t-from-data-field"

    def refuse_secret(request):
        if request.method == "PATCH" and "/secrets/" in request.path:
            quoted = message.format(v=f"{SECRET_TEXT} (and {decoded}, {ENCODED})")
            return status, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                            "reason": "Forbidden" if status == 403 else "Invalid",
                            "code": status, "message": quoted}
        return None

    emulator.state.faults.append(refuse_secret)
    applied = gitgate("apply", str(root), "--kubeconfig", kubeconfig, "-o", "json")
    status_out = gitgate("status", "--kubeconfig", kubeconfig, "-o", "json")
    inventories = json.dumps([s.obj for s in emulator.state.objects.values()
                              if s.obj["kind"] == "ConfigMap"])
    shop = _bundle(json.loads(applied.stdout), "shop")
    assert shop["failed"] and "Secret shop/s" in shop["message"], shop
    assert "(value hidden)" in shop["message"]  # the rest of the message still helps
    for text in (applied.stdout, applied.stderr, status_out.stdout, status_out.stderr,
                 inventories):
        assert SECRET_TEXT not in text and decoded not in text and ENCODED not in text


# ---------------------------------------------------------------- 5. values schema references
def _schema(ref: str) -> str:
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                       "properties": {"mode": {"$ref": ref}}})


def test_a_schema_ref_to_a_host_file_is_refused(tmp_path, outside, tools):
    (outside / "enum.json").write_text(json.dumps({"enum": [OUTSIDE]}))
    root = repo(tmp_path, chart("app", **{"values.schema.json": _schema(
        f"file://{outside}/enum.json"), "values.yaml": "mode: x\n"}))
    assert_one_broken(root, "app/values.schema.json", "$ref")


def test_a_schema_ref_to_a_loopback_url_is_never_fetched(tmp_path, tools):
    import http.server
    import threading

    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            asked.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps({"enum": [OUTSIDE]}).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/enum.json"
        for schema in (_schema(url), json.dumps({"$schema": url, "type": "object"}),
                       json.dumps({"properties": {"a": {"$id": url, "$ref": "#/x"}}})):
            root = repo(tmp_path / str(len(asked)) / schema[:3].strip("{\""), chart(
                "app", **{"values.schema.json": schema}))
            assert_one_broken(root, "app/values.schema.json")
    finally:
        server.shutdown()
    assert asked == []


def test_a_schema_ref_inside_a_vendored_subchart_archive_is_refused(tmp_path, outside, tools):
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in {**CHART_FILES, "values.schema.json": _schema(
                f"file://{outside}/enum.json")}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"sub/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    root = repo(tmp_path, chart("app", **{"Chart.yaml": (
        "apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n"
        "  - {name: sub, version: 0.1.0}\n")}))
    (root / "app" / "charts").mkdir()
    (root / "app" / "charts" / "sub-0.1.0.tgz").write_bytes(buffer.getvalue())
    assert_one_broken(root, "app/charts/sub-0.1.0.tgz", "$ref")


def test_a_schema_with_local_refs_still_validates_values(tmp_path, tools):
    schema = json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema",
                         "$id": "https://example.com/values.schema.json",
                         "$defs": {"mode": {"enum": ["a", "b"]}},
                         "properties": {"mode": {"$ref": "#/$defs/mode"}}})
    good = repo(tmp_path / "good", chart("app", **{"values.schema.json": schema,
                                                   "values.yaml": "mode: a\n"}))
    assert render(good)[0].returncode == 0
    bad = repo(tmp_path / "bad", chart("app", **{"values.schema.json": schema,
                                                 "values.yaml": "mode: z\n"}))
    assert_one_broken(bad, "app", "mode")


# ---------------------------------------------------------------- 6. what an approval covers
@pytest.mark.parametrize("change", [
    "placement: {clusterAffinity: {clusterNames: [canary, prod-eu, prod-us]}}\n",
    "placement: {clusterAffinity: {clusterNames: [canary]}}\nlabels: {tier: other}\n",
    "placement: {clusterAffinity: {clusterNames: [canary]}}\ndependsOn: [good]\n",
    "placement: {clusterAffinity: {clusterNames: [canary]}}\nrollout: {waves: [{clusters: "
    "[canary]}]}\n",
])
def test_an_approval_does_not_outlive_a_change_of_where_or_how_a_bundle_goes(tmp_path, tools,
                                                                            change):
    freeze = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
              "spec: {bundles: [shop], reason: freeze}\n")
    root = _committed(tmp_path, {"gates/freeze.yaml": freeze, "shop/bundle.yaml": (
        "namespace: shop\nplacement: {clusterAffinity: {clusterNames: [canary]}}\n")})
    approved = gitgate("approve", "shop", "--repo", str(root))
    assert approved.returncode == 0, approved.stderr
    assert _verdicts(root)["shop"] == "apply"
    (root / "shop" / "bundle.yaml").write_text("namespace: shop\n" + change)
    assert _verdicts(root)["shop"] == "held"


# ---------------------------------------------------------------- 8. a kind of unknown scope
def widget(name: str, namespace: str | None = None) -> str:
    where = f", namespace: {namespace}" if namespace else ""
    return f"apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}{where}}}\n"


WIDGETS = {"a/w.yaml": widget("shared"), "a/bundle.yaml": "namespace: team-a\n",
           "b/w.yaml": widget("shared"), "b/bundle.yaml": "namespace: team-b\n"}


def test_one_name_of_an_unknown_kind_in_two_namespaces_fails_both_offline(tmp_path, tools):
    root = repo(tmp_path, WIDGETS)
    result, document = render(root)
    assert result.returncode == 1
    blamed = {e["source"] for e in document["errors"] if e["reason"] == "UnknownKind"}
    assert blamed == {"a", "b"}, document["errors"]
    assert "good" in rendered_names(document) and "shared" not in rendered_names(document)


def test_the_api_server_says_a_kind_is_cluster_scoped(tmp_path, emulator, tools):
    emulator.state.install_crd({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
                 "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                           "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object",
                                         "x-kubernetes-preserve-unknown-fields": True}}}]}})
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    root = repo(tmp_path, WIDGETS)
    both = _apply(root, kubeconfig)
    assert _bundle(both, "a")["failed"] and _bundle(both, "b")["failed"]
    assert "also rendered by" in _bundle(both, "a")["message"]  # one object, two owners
    (root / "b" / "w.yaml").unlink()
    alone = _apply(root, kubeconfig)
    assert [shown(r) for r in _bundle(alone, "a")["applied"]] == ["Widget.example.com shared"], \
        alone
    assert ("widgets", "", "shared") in _objects(emulator)


# ---------------------------------------------------------------- 12. slow clients, real `run`
def test_slow_clients_never_make_the_running_loop_look_dead(kube, tmp_path):
    import signal
    import socket
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT
    from tests.support.http import free_port, get, until
    from tests.support.looping import Upstream

    upstream = Upstream(tmp_path, kube)
    port = free_port()
    loop = subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "run", "--repo", upstream.url, "--kubeconfig",
         kube.kubeconfig, "--instance", kube.run_id, "--listen", f"127.0.0.1:{port}",
         "--interval", "1h", "--no-leader-elect", "--cache-dir", str(tmp_path / "cache")],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    idle = []
    try:
        until(lambda: get(f"http://127.0.0.1:{port}/healthz")[0] == 200, 60, "loop up")
        for _ in range(40):  # more than the old server's 32 threads
            conn = socket.create_connection(("127.0.0.1", port))
            conn.sendall(b"GET /status HTTP/1.1\r\nX-Slow: ")  # and never another byte
            idle.append(conn)
        for _ in range(5):
            assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200
            assert get(f"http://127.0.0.1:{port}/readyz")[0] in (200, 503)
        loop.send_signal(signal.SIGTERM)  # with the slow clients still connected
        assert loop.wait(20) == 0
    finally:
        for conn in idle:
            conn.close()
        loop.send_signal(signal.SIGTERM)
        loop.wait(20)


# ---------------------------------------------------------------- 11. memory and object budgets
def test_a_template_eating_memory_meets_the_memory_limit(tmp_path, tools):
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": growing_template(24)}))
    result = gitgate("render", str(root), "-o", "json",
                     env={"GITGATE_RENDER_MAX_MEMORY": str(256 << 20)})
    errors = json.loads(result.stdout)["errors"]
    assert result.returncode == 1 and "good" in rendered_names(json.loads(result.stdout))
    messages = [e["message"] for e in errors]
    assert any("ran out of its 256 MiB of memory" in m and "GITGATE_RENDER_MAX_MEMORY" in m
               for m in messages), messages


def _many(folder: str, count: int) -> dict[str, str]:
    return {f"{folder}/cms.yaml": "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {folder}-{i}}}\n"
        for i in range(count))}


def test_a_source_rendering_too_many_objects_fails_alone(tmp_path, tools):
    spray = "{{- range until 120 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: " \
            "{name: c-{{ . }}}\n{{- end }}\n"
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": spray}))
    result = gitgate("render", str(root), "-o", "json",
                     env={"GITGATE_RENDER_MAX_OBJECTS": "100"})
    document = json.loads(result.stdout)
    assert result.returncode == 1 and rendered_names(document) == {"good"}
    assert any("GITGATE_RENDER_MAX_OBJECTS" in e["message"] for e in document["errors"])


def test_a_pass_over_its_object_budget_fails_the_largest_sources_first(tmp_path, tools):
    root = repo(tmp_path, {**_many("big", 40), **_many("mid", 30), **_many("small", 10)})
    env = {"GITGATE_PASS_MAX_OBJECTS": "50"}
    for _ in range(2):  # the same decision every pass
        result = gitgate("render", str(root), "-o", "json", env=env)
        document = json.loads(result.stdout)
        failed = {e["source"] for e in document["errors"]}
        assert failed == {"big"}, document["errors"]
        assert "big (40)" in document["errors"][0]["message"]
        assert {"good", "mid-0", "small-0"} <= rendered_names(document)


def test_sigterm_to_a_command_stops_the_tools_it_started(tmp_path, tools):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT

    spin = ("{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    root = repo(tmp_path, chart("spinning-chart", **{"templates/cm.yaml": spin}))
    command = subprocess.Popen([sys.executable, "-m", "gitgate.cli", "render", str(root)],
                               cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    def helms() -> list[str]:
        found = subprocess.run(["pgrep", "-f", f"{root}/spinning-chart"], capture_output=True,
                               text=True).stdout.split()
        return [pid for pid in found if pid != str(command.pid)]

    try:
        deadline = time.monotonic() + 30
        while not helms() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert helms(), "helm never started"
        command.send_signal(signal.SIGTERM)
        assert command.wait(10) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 5
        while helms() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert helms() == []
    finally:
        command.kill()
        for pid in helms():
            os.kill(int(pid), signal.SIGKILL)
