"""An instance belongs to one repo, and an object to one instance: the real CLI in a
subprocess against the API emulator over HTTP. A second repo applied to an instance another
repo owns is refused before any write, naming the owner (`--adopt` takes it over); objects
gitgate writes carry `gitgate.io/instance`, and another instance neither takes them over
(unless `--force-conflicts`) nor shows them as its own to create or configure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitgate.karmada.policy import policy_name
from tests.conftest import committed_repo, write_files
from tests.support.hostile import gitgate
from tests.support.manifests import cm

pytestmark = pytest.mark.integration

BUNDLES = ("gitgate.io/v1alpha1", "Bundle", "gitgate-system")


def namespace(name: str) -> str:
    return f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n"


def platform(kube) -> dict[str, str]:
    """A bundle both repos hold (a folder one team copied from the other)."""
    ns = kube.ns("platform")
    return {"gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
            "platform/bundle.yaml": f"name: {kube.run_id}-platform\n",
            "platform/objects.yaml": namespace(ns) + cm("a", ns) + cm("b", ns) + cm("c", ns)}


def repo_a(tmp_path: Path, kube) -> Path:
    """The first repo: `platform`, and `web` (a Namespace and a ConfigMap) that repo B lacks."""
    web = kube.ns("web")
    root = write_files(tmp_path / "team-a", {
        **platform(kube), "web/bundle.yaml": f"name: {kube.run_id}-web\n",
        "web/objects.yaml": namespace(web) + cm("web", web)})
    committed_repo(root)
    return root


def repo_b(tmp_path: Path, kube) -> Path:
    """A second repo, with a remote whose URL carries a token."""
    root = write_files(tmp_path / "team-b", {
        **platform(kube), "api/bundle.yaml": f"name: {kube.run_id}-api\n",
        "api/objects.yaml": cm("api", kube.ns("platform"))})
    repo = committed_repo(root)
    repo.create_remote("origin", "https://bot:s3cret-token@Git.Example.com/team/b.git")
    return root


def cli(*argv: str) -> tuple[int, dict | None, str]:
    done = gitgate(*argv)
    assert done.returncode in (0, 1, 2), done.stderr[-2000:]
    try:
        document = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        document = None
    return done.returncode, document, done.stderr


def records(kube, instance: str) -> dict[str, dict]:
    return {r["spec"]["bundle"]: r["spec"] for r in kube.cluster.list_objects(
        *BUNDLES, f"gitgate.io/instance={instance}")}


def live(kube, kind: str, ns: str, name: str) -> dict | None:
    return kube.cluster.get("v1", kind, ns if kind != "Namespace" else "", name)


def test_a_second_repo_on_an_instance_is_refused_naming_the_first_and_prunes_nothing(
        tmp_path, kube, tools):
    """Applied as it was before, repo B would have pruned repo A's `web` (3 of 11 objects:
    under the mass-prune brake), and its suspend gate would have reached A's policy before
    rendering. It is refused before any write, as is its live plan."""
    a, b = repo_a(tmp_path, kube), repo_b(tmp_path, kube)
    write_files(b, {"gates/freeze.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                    "metadata: {name: freeze}\nspec: {bundles: ['*'], action: suspend, "
                    "reason: INC-1}\n"})
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    code, doc, _ = cli("apply", str(a), *flags, "-o", "json")
    assert code == 0 and doc["ok"]
    before = records(kube, kube.run_id)

    for command in ("apply", "plan"):
        code, _, err = cli(command, str(b), *flags, "-o", "json")
        assert code == 2, err
        assert f"the instance '{kube.run_id}'" in err and f"file://{a.resolve()}" in err
        assert f"{kube.run_id}-web" in err and "--adopt" in err
        assert "git.example.com/team/b" in err and "s3cret-token" not in err

    web = kube.ns("web")
    assert live(kube, "Namespace", "", web) is not None
    assert live(kube, "ConfigMap", web, "web")["data"] == {"value": "v1"}
    assert live(kube, "ConfigMap", kube.ns("platform"), "api") is None  # B wrote nothing
    policy = kube.cluster.get("policy.karmada.io/v1alpha1", "PropagationPolicy", web,
                              policy_name(f"{kube.run_id}-web", kube.run_id))
    assert "suspension" not in policy["spec"]
    assert records(kube, kube.run_id) == before
    owner = before[f"{kube.run_id}-web"]
    assert (owner["repo"], owner["repoPath"]) == (f"file://{a.resolve()}", ".")


def test_adopt_takes_the_instance_over_and_the_first_repo_is_then_refused(tmp_path, kube,
                                                                          tools):
    a, b = repo_a(tmp_path, kube), repo_b(tmp_path, kube)
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert cli("apply", str(a), *flags)[0] == 0

    code, doc, err = cli("plan", str(b), *flags, "--adopt", "-o", "json")
    assert code == 0, err
    removed = {r["name"]: {c["object"]: c["action"] for c in r["changes"]}
               for r in doc["removedBundles"]}
    assert removed[f"{kube.run_id}-web"][f"ConfigMap {kube.ns('web')}/web"] == "deleted"

    code, doc, err = cli("apply", str(b), *flags, "--adopt", "-o", "json")
    assert code == 0 and doc["ok"], err
    assert live(kube, "ConfigMap", kube.ns("platform"), "api") is not None
    assert live(kube, "ConfigMap", kube.ns("web"), "web") is None  # A's web: pruned
    owned = records(kube, kube.run_id)
    assert set(owned) == {f"{kube.run_id}-platform", f"{kube.run_id}-api"}
    assert {(s["repo"], s["repoPath"]) for s in owned.values()} == {
        ("git.example.com/team/b", ".")}

    code, _, err = cli("apply", str(a), *flags)
    assert code == 2 and "git.example.com/team/b" in err and f"file://{a.resolve()}" in err


def test_a_record_without_a_repo_is_taken_by_the_first_repo_that_applies_it(tmp_path, kube,
                                                                            tools):
    """A record an earlier release wrote names no repo: nobody owns it, and the first repo
    that applies the instance writes its own name into it."""
    a = repo_a(tmp_path, kube)
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert cli("apply", str(a), *flags)[0] == 0
    for record in kube.cluster.list_objects(*BUNDLES, f"gitgate.io/instance={kube.run_id}"):
        spec = {k: v for k, v in record["spec"].items() if k not in ("repo", "repoPath")}
        kube.cluster.request("PUT", f"/apis/gitgate.io/v1alpha1/namespaces/gitgate-system/"
                             f"bundles/{record['metadata']['name']}",
                             body={**record, "spec": spec})
    assert all("repo" not in s for s in records(kube, kube.run_id).values())
    moved = write_files(tmp_path / "moved", {**platform(kube)})
    code, _, err = cli("apply", str(moved), *flags)
    assert code == 0, err
    assert {s["repo"] for s in records(kube, kube.run_id).values()} == {
        f"file://{moved.resolve()}"}


def test_live_plan_of_another_instance_names_the_owner_instead_of_proposing_writes(
        tmp_path, kube, tools):
    a = repo_a(tmp_path, kube)
    assert cli("apply", str(a), "--kubeconfig", kube.kubeconfig, "--instance",
               kube.run_id)[0] == 0
    web = kube.ns("web")
    assert live(kube, "ConfigMap", web, "web")["metadata"]["labels"][
        "gitgate.io/instance"] == kube.run_id

    other = f"{kube.run_id}-other"
    code, doc, _ = cli("plan", str(a), "--kubeconfig", kube.kubeconfig, "--instance", other,
                       "-o", "json")
    assert code == 1  # apply would fail these bundles
    changes = {c["object"]: c for b in doc["bundles"] for c in b["changes"]}
    for shown in (f"Namespace {web}", f"ConfigMap {web}/web"):
        assert changes[shown]["action"] == "conflict"
        assert f"owned by instance {kube.run_id}" in changes[shown]["message"]
    code, _, _ = cli("plan", str(a), "--kubeconfig", kube.kubeconfig, "--instance", other)
    assert code == 1


def test_another_instance_does_not_take_an_object_over_unless_forced(tmp_path, kube, tools):
    a = repo_a(tmp_path, kube)
    assert cli("apply", str(a), "--kubeconfig", kube.kubeconfig, "--instance",
               kube.run_id)[0] == 0
    web = kube.ns("web")
    copy = write_files(tmp_path / "copy", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "web/bundle.yaml": f"name: {kube.run_id}-web\n",
        "web/objects.yaml": cm("web", web, data="taken")})
    other = f"{kube.run_id}-other"
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", other]

    code, doc, _ = cli("apply", str(copy), *flags, "-o", "json")
    assert code == 1
    [bundle] = doc["bundles"]
    assert bundle["failed"] and bundle["reason"] == "OtherInstance"
    assert f"gitgate.io/instance: {kube.run_id}" in bundle["message"]
    assert "--force-conflicts" in bundle["message"]
    held = live(kube, "ConfigMap", web, "web")
    assert held["data"] == {"value": "v1"}
    assert held["metadata"]["labels"]["gitgate.io/instance"] == kube.run_id

    code, doc, err = cli("apply", str(copy), *flags, "--force-conflicts", "-o", "json")
    assert code == 0, err
    taken = live(kube, "ConfigMap", web, "web")
    assert taken["data"] == {"value": "taken"}
    assert taken["metadata"]["labels"]["gitgate.io/instance"] == other

    # what the first instance lost is left alone when it leaves its repo, not deleted
    write_files(a, {"web/objects.yaml": namespace(web)})
    code, doc, err = cli("apply", str(a), "--kubeconfig", kube.kubeconfig, "--instance",
                         kube.run_id, "-o", "json")
    assert code == 0, err
    assert live(kube, "ConfigMap", web, "web")["data"] == {"value": "taken"}


def test_get_and_describe_name_the_repo_a_bundle_was_applied_from(tmp_path, kube, tools):
    """On-call asks "which repo wrote this?": `describe`, `get -o wide` and both JSON
    documents answer from the record, without the remote's credentials."""
    b = repo_b(tmp_path, kube)
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert cli("apply", str(b), *flags)[0] == 0
    api = f"{kube.run_id}-api"

    described = gitgate("describe", api, *flags)
    assert described.returncode == 0, described.stderr
    assert "Repo:         git.example.com/team/b\n" in described.stdout

    wide = gitgate("get", api, *flags, "-o", "wide")
    assert wide.returncode == 0, wide.stderr
    head, row = wide.stdout.splitlines()[:2]
    assert row.split()[head.split().index("REPO")] == "git.example.com/team/b"

    for argv in (("get", api), ("describe", api)):
        code, doc, err = cli(*argv, *flags, "-o", "json")
        shown = doc["bundles"][0] if argv[0] == "get" else doc
        assert code == 0 and (shown["repo"], shown["repoPath"]) == (
            "git.example.com/team/b", "."), err

    shown = [described.stdout, wide.stdout] + [
        gitgate(*argv, *flags, "-o", "json").stdout for argv in (("get",), ("describe", api))]
    assert not [text for text in shown if "s3cret-token" in text]
