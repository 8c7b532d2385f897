"""A template a suspended bundle takes over from a bundle that waits on a dependency: the
waiting bundle's live policy lets go of it first (`apply.takeover`), unless a freeze holds
or suspends the waiting bundle, before or while the pass writes; then nothing of the
template moves. Through the real CLI (and the pass with a freeze pushed mid-pass) against
the emulator, whose bindings dispatch like Karmada's controllers."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.cli import main
from gitgate.karmada.policy import policy_name
from gitgate.passes.onepass import reconcile
from tests.conftest import write_files
from tests.support.manifests import cm, deployment

pytestmark = pytest.mark.integration
NS = "shop"
PLACEMENT = "defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"
POLICY = "policy.karmada.io", "propagationpolicies"
SUSPEND_H = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: h}\n"
             "spec: {bundles: [h], action: suspend, clusters: [member2], reason: canary}\n")


def gate(name: str, spec: str) -> str:
    return (f"apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {{name: {name}}}\n"
            f"spec: {spec}\n")


@pytest.fixture
def repo(tmp_path, emulator, capsys):
    """Bundle `a` (team/a) has ConfigMaps a and moving; `h` (apps/h), suspended on member2
    by a gate, has h. Both went out."""
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/bundle.yaml": "name: ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
        "team/a/bundle.yaml": "name: a\ndependsOn: [ns]\n",
        "team/a/app.yaml": cm("a", NS) + cm("moving", NS),
        "apps/h/bundle.yaml": "name: h\ndependsOn: [ns]\n",
        "apps/h/app.yaml": cm("h", NS),
        "gates/h.yaml": SUSPEND_H})
    flags = ["--kubeconfig", str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))]
    assert apply(capsys, root, flags)["h"]["verdict"] == "suspended"
    return root, flags


def apply(capsys, root, flags) -> dict[str, dict]:
    capsys.readouterr()
    main(["apply", str(root), *flags, "-o", "json"])
    return {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}


def move(root, a_depends: str = "[ns, a]", **extra: str) -> None:
    """One commit: a waits on a dependency (by default itself, a cycle), `moving` (v2) goes
    from a to h."""
    write_files(root, {"team/a/bundle.yaml": f"name: a\ndependsOn: {a_depends}\n",
                       "team/a/app.yaml": cm("a", NS),
                       "apps/h/app.yaml": cm("h", NS) + cm("moving", NS, "v2"), **extra})


def a_selects_moving(emulator) -> bool:
    policy = emulator.state.object(*POLICY, NS, policy_name("a"))
    return any(s.get("name") == "moving" for s in policy["spec"]["resourceSelectors"])


def moving(emulator) -> tuple[str, object]:
    """The template's data, and what member2 runs of it."""
    template = emulator.state.object("", "configmaps", NS, "moving")
    key = emulator.state._binding_key(("", "", NS, "moving"), "ConfigMap")
    return template["data"]["value"], emulator.state.members[key]["member2"].data


def test_a_bundle_in_a_cycle_of_three_gives_the_template_up(repo, emulator, capsys):
    root, flags = repo
    move(root, "[ns, b]", **{"team/b/bundle.yaml": "name: b\ndependsOn: [c]\n",
                             "team/b/app.yaml": cm("b", NS),
                             "team/c/bundle.yaml": "name: c\ndependsOn: [a]\n",
                             "team/c/app.yaml": cm("c", NS)})
    found = apply(capsys, root, flags)
    assert {found[n]["reason"] for n in "abc"} == {"DependencyNotReady"}
    assert found["h"]["verdict"] == "suspended" and not found["h"].get("reason"), found["h"]
    assert not a_selects_moving(emulator)
    assert moving(emulator) == ("v2", {"value": "v1"})


@pytest.mark.parametrize("freeze", [
    {"gates/a.yaml": gate("a", "{bundles: [a], action: suspend, reason: incident}")},
    {"gates/a.yaml": gate("a", "{bundles: [a], reason: incident}")},
    {"team/PAUSE": "incident\n"}], ids=["suspend-gate", "hold-gate", "pause-above"])
def test_a_frozen_bundle_waiting_on_a_dependency_keeps_the_template(
        repo, emulator, capsys, freeze):
    root, flags = repo
    move(root, **freeze)
    found = apply(capsys, root, flags)
    assert found["h"]["reason"] == "Frozen", found["h"]
    assert a_selects_moving(emulator)
    assert moving(emulator) == ("v1", {"value": "v1"})


def test_a_freeze_pushed_mid_pass_over_the_waiting_bundle_keeps_the_template(
        repo, emulator, tools):
    """The freeze reaches the pass after it planned (a covered, waiting): the pass writes
    nothing more of a, its policy included; h's suspension is then not confirmed on the
    template a still claims, and h writes no template."""
    root, flags = repo
    move(root)
    frozen = []

    def late_freeze(bundle: str) -> str | None:
        frozen.append(bundle)
        return "team/PAUSE: incident" if bundle == "a" else None

    options = ApplyOptions(now=datetime.now(UTC), late_freeze=late_freeze,
                           suspension_timeout=ApplyOptions(datetime.now(UTC)).suspension_timeout
                           / 30)
    result = reconcile(root, tools, KubeCluster(load_client(flags[1])), options).result
    h = next(b for b in result.bundles if b.bundle == "h")
    assert h.failed and h.reason == "SuspensionNotObserved", (h.reason, h.message)
    assert a_selects_moving(emulator)
    assert moving(emulator) == ("v1", {"value": "v1"})


def test_a_giver_outside_the_pass_or_failed_keeps_the_template(repo, emulator, capsys):
    """`--bundle h` leaves a to another pass: its policy keeps the template, so h's
    suspension is not seen on it and h writes no template. Then a fails to render as well
    as waiting: what it would claim is kept back, nothing of the template moves."""
    root, flags = repo
    move(root)
    found = apply(capsys, root, [*flags, "--bundle", "h", "--suspension-timeout", "1s"])
    assert found["h"]["reason"] == "SuspensionNotObserved", found["h"]
    assert a_selects_moving(emulator)
    assert moving(emulator) == ("v1", {"value": "v1"})
    write_files(root, {"team/a/broken.yaml": "kind: [\n"})
    found = apply(capsys, root, [*flags, "--suspension-timeout", "1s"])
    assert found["a"]["verdict"] == "failed"
    assert found["h"]["reason"] == "SuspensionNotObserved", found["h"]
    assert a_selects_moving(emulator)
    assert moving(emulator) == ("v1", {"value": "v1"})


def test_the_giver_going_out_again_leaves_the_template_to_its_new_bundle(
        repo, emulator, capsys):
    """After the takeover a's record still lists the template (a wrote nothing). Once a's
    cycle is broken a goes out: it neither deletes nor rewrites what h has now."""
    root, flags = repo
    move(root)
    assert apply(capsys, root, flags)["a"]["reason"] == "DependencyNotReady"
    write_files(root, {"team/a/bundle.yaml": "name: a\ndependsOn: [ns]\n"})
    found = apply(capsys, root, flags)
    assert not found["a"]["failed"] and not found["h"]["failed"], found
    assert not a_selects_moving(emulator)
    assert moving(emulator) == ("v2", {"value": "v1"})
    deletes = [r.path for r in emulator.state.requests
               if r.method == "DELETE" and r.path.endswith("/configmaps/moving")]
    assert deletes == []


def role(name: str, verb: str) -> str:
    return (f"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
            f"metadata: {{name: {name}}}\nrules: [{{apiGroups: [''], resources: [pods], "
            f"verbs: [{verb}]}}]\n")


def test_a_cluster_scoped_template_is_let_go_of_by_the_cluster_policy(
        repo, emulator, capsys):
    """The template is a ClusterRole: the waiting bundle's ClusterPropagationPolicy lets go
    of it, and the binding takes h's suspension."""
    root, flags = repo
    write_files(root, {"team/a/app.yaml": cm("a", NS) + cm("moving", NS)
                       + role("moving-role", "get") + role("kept-role", "get")})
    assert not apply(capsys, root, flags)["a"]["failed"]
    write_files(root, {"team/a/bundle.yaml": "name: a\ndependsOn: [ns, a]\n",
                       "team/a/app.yaml": cm("a", NS) + cm("moving", NS)
                       + role("kept-role", "get"),
                       "apps/h/app.yaml": cm("h", NS) + role("moving-role", "list")})
    found = apply(capsys, root, flags)
    assert found["h"]["verdict"] == "suspended" and not found["h"]["failed"], found["h"]
    cpp = emulator.state.object("policy.karmada.io", "clusterpropagationpolicies", "",
                                policy_name("a"))
    assert [s["name"] for s in cpp["spec"]["resourceSelectors"]] == ["kept-role"]
    binding = emulator.state.object("work.karmada.io", "clusterresourcebindings", "",
                                    "moving-role-clusterrole")
    assert binding["spec"]["suspension"] == {"dispatchingOnClusters":
                                             {"clusterNames": ["member2"]}}


def test_a_template_a_held_workload_uses_stays_with_the_waiting_bundle(
        repo, emulator, capsys):
    """A paused bundle's Deployment reads `moving`: it is frozen with it, whoever takes it."""
    root, flags = repo
    write_files(root, {"paused/w/bundle.yaml": "name: w\ndependsOn: [ns]\n",
                       "paused/w/app.yaml": deployment("w", NS, "w:1", "moving")})
    assert not apply(capsys, root, flags)["w"]["failed"]
    move(root, **{"paused/PAUSE": "incident\n"})
    found = apply(capsys, root, flags)
    assert found["w"]["verdict"] == "held"
    assert "moving is used by Deployment.apps shop/w of held bundle w" in found["h"]["message"]
    assert a_selects_moving(emulator)
    assert moving(emulator) == ("v1", {"value": "v1"})


def test_a_template_taken_without_a_suspension_follows_the_taking_placement(
        repo, emulator, capsys):
    """h places on member1 only and is not suspended: a (waiting) lets go of `moving` before
    h writes it, so h's content never reaches member2 through a's placement."""
    root, flags = repo
    (root / "gates/h.yaml").unlink()
    write_files(root, {"apps/h/bundle.yaml": "name: h\ndependsOn: [ns]\n"
                       "placement: {clusterAffinity: {clusterNames: [member1]}}\n"})
    assert apply(capsys, root, flags)["h"]["verdict"] == "apply"
    move(root)
    found = apply(capsys, root, flags)
    assert found["h"]["verdict"] == "apply" and not found["h"]["failed"], found["h"]
    assert not a_selects_moving(emulator)
    key = emulator.state._binding_key(("", "", NS, "moving"), "ConfigMap")
    assert {c: m.data for c, m in emulator.state.members[key].items()} == {
        "member1": {"value": "v2"}}


@pytest.mark.xfail(strict=True, reason="the takeover consults only the records of bundles the "
                   "pass writes (or prunes, or that wait): a giver outside the pass keeps its "
                   "policy, and an unsuspended taker's content follows its placement until "
                   "the giver's own pass; belongs in apply.takeover (keep such a template back)")
def test_a_template_taken_from_a_bundle_outside_the_pass_follows_the_taking_placement(
        repo, emulator, capsys):
    root, flags = repo
    (root / "gates/h.yaml").unlink()
    write_files(root, {"apps/h/bundle.yaml": "name: h\ndependsOn: [ns]\n"
                       "placement: {clusterAffinity: {clusterNames: [member1]}}\n"})
    assert apply(capsys, root, flags)["h"]["verdict"] == "apply"
    move(root, "[ns]")
    apply(capsys, root, [*flags, "--bundle", "h"])
    key = emulator.state._binding_key(("", "", NS, "moving"), "ConfigMap")
    assert "member2" not in {c for c, m in emulator.state.members[key].items()
                             if m.data == {"value": "v2"}}
