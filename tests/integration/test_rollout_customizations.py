"""A rollout over a bundle with per-cluster customizations (`clusters:`), over the emulator:
the waves decide only which clusters get the new version. The bundle's generated override
policies stay in force through every wave, none is deleted or written again because a
rollout started, and a cluster the rollout keeps suspended runs what it ran before."""

from __future__ import annotations

import json
import textwrap
from datetime import timedelta

import pytest

from gitgate.cli import main
from tests.conftest import committed_repo, write_files
from tests.support.looping import T0, Clock
from tests.support.records import stored_record
from tests.support.webrepo import NS, app, web_repo

pytestmark = pytest.mark.integration
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 2s, "
           "progressDeadline: 6s}\n")
OVERRIDE_PATH = f"/namespaces/{NS}/overridepolicies/"
FAILURE = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": "etcdserver: request timed out", "reason": "InternalError", "code": 500}


def customized(member1: int = 2, member2: int = 3) -> str:
    return textwrap.dedent(f"""\
        clusters:
          - clusters: [member1]
            patches:
              - target: {{kind: Deployment, name: web}}
                patch: [{{op: add, path: /spec/replicas, value: {member1}}}]
          - clusters: [member2]
            patches:
              - target: {{kind: Deployment, name: web}}
                patch: [{{op: add, path: /spec/replicas, value: {member2}}}]
        """)


@pytest.fixture
def setup(tmp_path, emulator):
    return web_repo(tmp_path, emulator, ROLLOUT + customized())


def apply(capsys, root, flags, clock) -> dict:
    capsys.readouterr()
    code = main(["apply", str(root), *flags, "-o", "json"], clock=clock)
    out = capsys.readouterr().out
    assert code == 0, out
    return next(b for b in json.loads(out)["bundles"] if b["name"] == "web")


def healthy(emulator, cluster):
    emulator.state.report(NS, "Deployment", "web", cluster, health="Healthy")


def runs(emulator, cluster: str) -> int | None:
    key = emulator.state._binding_key(("", "", NS, "web"), "Deployment")
    member = emulator.state.members.get(key, {}).get(cluster)
    return member.runs if member and member.applied else None


def work(emulator, cluster: str) -> dict | None:
    """The Work Karmada rendered for the web Deployment on `cluster`."""
    for key, stored in emulator.state.objects.items():
        if key[:3] == ("work.karmada.io", "works", f"karmada-es-{cluster}") and \
                key[3].startswith("web-deployment-"):
            return stored.obj
    return None


def replicas(emulator, cluster: str) -> list[int]:
    """The replicas the overrides applied on `cluster` set (what the member runs)."""
    found = work(emulator, cluster)
    annotations = (found or {}).get("metadata", {}).get("annotations") or {}
    applied = json.loads(annotations.get("policy.karmada.io/applied-overrides", "[]"))
    return [op["value"] for item in applied for op in item["overriders"]["plaintext"]
            if op["path"] == "/spec/replicas"]


def member_state(emulator, cluster: str) -> tuple:
    """What a member runs: the template generation and its Work (overrides included)."""
    found = work(emulator, cluster) or {}
    meta = found.get("metadata", {})
    return runs(emulator, cluster), meta.get("generation"), meta.get("annotations")


def override_deletes(emulator) -> list[str]:
    return [r.path for r in emulator.state.requests
            if r.method == "DELETE" and OVERRIDE_PATH in r.path]


def override_writes(emulator) -> list[str]:
    return [r.path for r in emulator.state.writes() if OVERRIDE_PATH in r.path]


def suspension_writes(emulator) -> list[int]:
    """Where in the request log web's PropagationPolicy was written."""
    return [i for i, r in enumerate(emulator.state.writes())
            if r.path.endswith(f"/namespaces/{NS}/propagationpolicies/gitgate-web")]


def events(capsys, flags, clock) -> list[str]:
    capsys.readouterr()
    assert main(["describe", "web", *flags, "-o", "json"], clock=clock) == 0
    return [e["reason"] for e in json.loads(capsys.readouterr().out)["events"]]


class Watch:
    """A rollout watched pass by pass: every pass keeps the bundle's override policies
    (none deleted) and leaves the clusters named in `held` as they were before it."""

    def __init__(self, capsys, emulator, root, flags, clock):
        self.capsys, self.emulator, self.root, self.flags, self.clock = (
            capsys, emulator, root, flags, clock)
        emulator.state.requests.clear()

    def apply(self, *held: str) -> dict:
        before = {c: member_state(self.emulator, c) for c in held}
        web = apply(self.capsys, self.root, self.flags, self.clock)
        assert override_deletes(self.emulator) == []
        assert {c: member_state(self.emulator, c) for c in held} == before
        return web

    def to_the_end(self, *, rolled: int) -> None:
        """Wave 1 (member1) running generation `rolled` from here to the rollout's end;
        member2 keeps what it runs until wave 2 releases it."""
        healthy(self.emulator, "member1")
        self.apply("member2")
        self.clock.advance(seconds=2.2)
        assert self.apply()["verdict"] == "apply"  # wave 2 released
        assert runs(self.emulator, "member2") == rolled
        healthy(self.emulator, "member2")
        self.apply()
        self.clock.advance(seconds=2.2)
        self.apply()
        assert json.loads(stored_record(self.emulator, "web").progression.rollout)["wave"] == 2


def rolled_out(capsys, emulator, root, flags, clock) -> Watch:
    """The repo's version rolled out to both members (the test of a new bundle watches how);
    a watch of what follows."""
    apply(capsys, root, flags, clock)
    healthy(emulator, "member1")
    apply(capsys, root, flags, clock)
    clock.advance(seconds=2.2)
    apply(capsys, root, flags, clock)
    healthy(emulator, "member2")
    apply(capsys, root, flags, clock)
    clock.advance(seconds=2.2)
    apply(capsys, root, flags, clock)
    assert (runs(emulator, "member1"), runs(emulator, "member2")) == (1, 1)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([2], [3])
    return Watch(capsys, emulator, root, flags, clock)


def test_a_new_bundle_rolls_out_customized_from_wave_1(setup, emulator, capsys):
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = Watch(capsys, emulator, root, flags, clock)
    assert watch.apply()["verdict"] == "suspended"
    assert runs(emulator, "member2") is None
    assert replicas(emulator, "member1") == [2]  # wave 1 runs its customized content
    watch.to_the_end(rolled=1)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([2], [3])


def test_a_new_version_rolls_out_with_the_customizations_in_force(setup, emulator, capsys):
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = rolled_out(capsys, emulator, root, flags, clock)
    write_files(root, {"web/app.yaml": app("web:2")})
    assert watch.apply("member2")["verdict"] == "suspended"
    assert runs(emulator, "member1") == 2 and replicas(emulator, "member1") == [2]
    watch.to_the_end(rolled=2)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([2], [3])
    assert override_writes(emulator) == []  # unchanged in Git: never written again
    assert "Pruned" not in events(capsys, flags, clock)


@pytest.mark.parametrize("gated", ["member1", "member2"])
def test_a_rollout_started_while_a_gate_suspends_a_cluster(setup, emulator, capsys, gated):
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = rolled_out(capsys, emulator, root, flags, clock)
    write_files(root, {"gates/web.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: web-freeze}\n"
        f"spec: {{bundles: [web], action: suspend, reason: maintenance, clusters: [{gated}]}}\n")})
    assert watch.apply("member1", "member2")["verdict"] == "suspended"
    write_files(root, {"web/app.yaml": app("web:2")})
    assert watch.apply(gated, "member2")["verdict"] == "suspended"
    assert watch.apply(gated, "member2")["verdict"] == "suspended"
    if gated == "member2":  # wave 1 went out with member1's customization
        assert runs(emulator, "member1") == 2 and replicas(emulator, "member1") == [2]
    (root / "gates/web.yaml").unlink()
    watch.apply("member2")
    assert runs(emulator, "member1") == 2 and replicas(emulator, "member1") == [2]
    watch.to_the_end(rolled=2)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([2], [3])
    assert override_writes(emulator) == []


def test_a_halted_rollout_and_its_retry_keep_the_customizations(setup, emulator, capsys):
    root, flags = setup
    committed_repo(root, "web with customizations")
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = rolled_out(capsys, emulator, root, flags, clock)
    write_files(root, {"web/app.yaml": app("web:2")})
    watch.apply("member2")
    clock.advance(seconds=6.2)  # member1 never healthy: past the deadline
    assert watch.apply("member2")["verdict"] == "halted"
    assert watch.apply("member2")["verdict"] == "halted"
    capsys.readouterr()
    assert main(["resume", "web", "--repo", str(root), *flags], clock=clock) == 0
    assert watch.apply("member2")["verdict"] == "suspended"  # the wave again
    watch.to_the_end(rolled=2)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([2], [3])
    assert override_writes(emulator) == []


def test_a_pass_that_failed_mid_rollout_and_the_next_keep_the_customizations(
        setup, emulator, capsys):
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = rolled_out(capsys, emulator, root, flags, clock)
    write_files(root, {"web/app.yaml": app("web:2")})

    def refuse_the_deployment(request):
        if request.method == "PATCH" and request.path.endswith(f"/{NS}/deployments/web"):
            return 500, FAILURE
        return None

    emulator.state.faults.append(refuse_the_deployment)
    capsys.readouterr()
    before = member_state(emulator, "member2")
    assert main(["apply", str(root), *flags, "-o", "json"], clock=clock) != 0
    emulator.state.faults.clear()
    assert override_deletes(emulator) == [] and member_state(emulator, "member2") == before
    assert watch.apply("member2")["verdict"] == "suspended"
    assert runs(emulator, "member1") == 2 and replicas(emulator, "member1") == [2]
    watch.to_the_end(rolled=2)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([2], [3])


def test_customizations_changed_with_the_version_reach_each_cluster_with_its_wave(
        setup, emulator, capsys):
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = rolled_out(capsys, emulator, root, flags, clock)
    write_files(root, {"web/app.yaml": app("web:2"),
                       "web/bundle.yaml": "name: web\ndependsOn: [ns]\n" + ROLLOUT
                       + customized(member1=5, member2=4)})
    assert watch.apply("member2")["verdict"] == "suspended"
    assert runs(emulator, "member1") == 2 and replicas(emulator, "member1") == [5]
    changed = [i for i, r in enumerate(emulator.state.writes()) if OVERRIDE_PATH in r.path]
    assert changed and min(changed) > max(suspension_writes(emulator))  # suspension first
    watch.to_the_end(rolled=2)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([5], [4])


def test_repo_overrides_and_customizations_both_stay_through_the_rollout(
        tmp_path, emulator, capsys):
    root, flags = web_repo(tmp_path, emulator, ROLLOUT + customized())
    write_files(root, {
        "web/override.yaml": repo_override("web-env", "member2", "/metadata/labels/tier",
                                           "web"),
        "platform/bundle.yaml": "name: platform\ndependsOn: [ns]\n",
        "platform/override.yaml": repo_override("platform-env", "member1",
                                                "/metadata/labels/team", "platform")})
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = rolled_out(capsys, emulator, root, flags, clock)
    assert policy_names(emulator, "member1") == ["gitgate-web.deployment.web", "platform-env"]
    assert policy_names(emulator, "member2") == ["gitgate-web.deployment.web", "web-env"]
    write_files(root, {"web/app.yaml": app("web:2")})
    assert watch.apply("member2")["verdict"] == "suspended"
    assert policy_names(emulator, "member1") == ["gitgate-web.deployment.web", "platform-env"]
    watch.to_the_end(rolled=2)
    assert policy_names(emulator, "member2") == ["gitgate-web.deployment.web", "web-env"]
    assert override_writes(emulator) == []


def test_a_second_version_mid_rollout_starts_over_with_the_customizations_in_force(
        setup, emulator, capsys):
    root, flags = setup
    clock = Clock(T0, tick=timedelta(seconds=1))
    watch = rolled_out(capsys, emulator, root, flags, clock)
    write_files(root, {"web/app.yaml": app("web:2")})
    watch.apply("member2")
    healthy(emulator, "member1")
    watch.apply("member2")  # baking
    write_files(root, {"web/app.yaml": app("web:3")})
    assert watch.apply("member2")["verdict"] == "suspended"  # wave 1 again
    assert runs(emulator, "member1") == 3 and replicas(emulator, "member1") == [2]
    assert runs(emulator, "member2") == 1
    watch.to_the_end(rolled=3)
    assert (replicas(emulator, "member1"), replicas(emulator, "member2")) == ([2], [3])
    assert override_writes(emulator) == []


def repo_override(name: str, cluster: str, path: str, value: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: policy.karmada.io/v1alpha1
        kind: OverridePolicy
        metadata: {{name: {name}, namespace: {NS}}}
        spec:
          resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]
          overrideRules:
            - targetCluster: {{clusterNames: [{cluster}]}}
              overriders:
                plaintext: [{{path: {path}, operator: add, value: {value}}}]
        """)


def policy_names(emulator, cluster: str) -> list[str]:
    """The override policies applied to the web Deployment on `cluster`."""
    annotations = (work(emulator, cluster) or {}).get("metadata", {}).get("annotations") or {}
    applied = json.loads(annotations.get("policy.karmada.io/applied-overrides", "[]"))
    return sorted({item["policyName"] for item in applied})
