"""The histories the property suite generates: a state machine whose steps are commits
(apps renamed, moved, relabelled, emptied, swallowed by a parent kustomization, changed;
`PAUSE` files and gates added and lifted) each followed by a real pass of gitgate against the
API emulator, checked against the reference model (`tests/support/freezemodel.py`) from the
emulator's request log and objects:

- no write or delete touched an object the model says is frozen;
- nothing a bundle of the commit still claims was deleted;
- a bundle the model says is open runs its content, and gitgate did not fail it;
- the cluster holds what the model says is live;
- a bundle the model says is suspended has the suspension in its policy;
- once nothing is frozen, two passes bring the cluster to exactly what the commit says."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from datetime import timedelta
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gitgate.apply.work import ApplyOptions
from gitgate.passes.onepass import reconcile
from tests.support.freezemodel import App, GateSpec, Model, Repo, bundles_of

SEED = os.environ.get("GITGATE_PROPERTY_SEED")  # unset: the same histories every run
EXAMPLES = int(os.environ.get("GITGATE_PROPERTY_EXAMPLES", "12"))
STEPS = int(os.environ.get("GITGATE_PROPERTY_STEPS", "14"))
PLACED = "member1"  # the one member cluster every bundle is placed on
ACTIONS = st.sampled_from(["hold", "suspend"])
APPS = 3
FOLDERS = ("apps/a{i}", "apps/a{i}/v2", "other/a{i}")
WRITES = ("POST", "PUT", "PATCH", "DELETE")


class FreezeHistories(RuleBasedStateMachine):
    """One history: a repo folder, a model, one instance and namespace on the API server
    (the emulator, or Karmada: the requests gitgate sent are read from its own client)."""

    cluster = None  # set by the test: a RecordingKube
    tools = None
    tmp: Path | None = None
    # with a real Karmada: its member clusters, each read after every step
    members: dict | None = None
    member_timeout = 60.0
    counts = {"histories": 0, "steps": 0, "passes": 0}

    def __init__(self) -> None:
        super().__init__()
        run = "h" + uuid.uuid4().hex[:8]
        assert self.tmp is not None
        self.root = self.tmp / run
        self.instance, self.ns = run, f"{run}-ns"
        self.repo = Repo(apps={i: App(f"apps/a{i}", {f"a{i}-c0": "v0", f"a{i}-c1": "v0"})
                               for i in range(APPS)})
        self.model = Model()
        self.version = 0
        self.counts["histories"] += 1
        self.write_repo()
        self.run_pass()

    # ------------------------------------------------------------------ the repo's files
    def write_repo(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)
        files = {"gitgate.yaml": "defaults: {placement: {clusterAffinity: "
                                 f"{{clusterNames: [{PLACED}]}}}}}}\n",
                 "ns/bundle.yaml": f"name: {self.instance}-ns\n",
                 "ns/ns.yaml": "apiVersion: v1\nkind: Namespace\n"
                               f"metadata: {{name: {self.ns}}}\n"}
        for app in self.repo.apps.values():
            if app.present:
                files[f"{app.folder}/cm.yaml"] = "".join(
                    f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, "
                    f"namespace: {self.ns}}}\ndata: {{value: '{value}'}}\n"
                    for name, value in sorted(app.objects.items()))
                said = [f"name: {app.name}"] if app.name else []
                said += [f"labels: {{team: {app.team}}}"] if app.team else []
                if said:
                    files[f"{app.folder}/bundle.yaml"] = "\n".join(said) + "\n"
        for folder in self.repo.pauses:
            files[f"{folder}/PAUSE"] = "frozen by the history\n"
        for file, spec in self.repo.gates.items():
            selector = (f"bundles: ['{spec.value}']" if spec.by == "name"
                        else f"selector: {{matchLabels: {{team: {spec.value}}}}}")
            until = f", until: '{spec.until.isoformat()}'" if spec.until else ""
            files[f"gates/{file}.yaml"] = self.gate(
                file, f"{selector}, action: {spec.action}{until}")
        if self.repo.swallowed:
            below = sorted(f"{a.folder.removeprefix('apps/')}/cm.yaml"
                           for a in self.repo.apps.values()
                           if a.present and a.folder.startswith("apps/"))
            files["apps/kustomization.yaml"] = f"resources: [{', '.join(below)}]\n"
        for rel, text in files.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_text(text)

    @staticmethod
    def gate(name: str, selector: str) -> str:
        return (f"apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {{name: {name}}}\n"
                f"spec: {{{selector}, reason: a freeze of the history}}\n")

    # ------------------------------------------------------------------ a pass
    def live(self, cluster=None) -> dict[str, str]:
        """The ConfigMaps of the history's namespace: the templates, or a member's."""
        return {o["metadata"]["name"]: (o.get("data") or {}).get("value", "")
                for o in (cluster or self.cluster).list_objects("v1", "ConfigMap", self.ns)
                if o["metadata"]["name"] != "kube-root-ca.crt"}

    def run_pass(self) -> None:
        judged = self.model.judge(self.repo)
        before = self.live()
        start = len(self.cluster.sent)
        result = reconcile(self.root, self.tools, self.cluster, ApplyOptions(
            now=self.repo.now, instance=self.instance, allow_mass_prune=True)).result
        self.counts["passes"] += 1
        assert result is not None
        prefix = f"/api/v1/namespaces/{self.ns}/configmaps/"
        touched = {path.removeprefix(prefix) for method, path, _, dry in self.cluster.sent[start:]
                   if method in WRITES and path.startswith(prefix) and not dry}
        after = self.live()
        assert not touched & judged.frozen, (
            f"frozen objects written: {sorted(touched & judged.frozen)}; repo {self.repo}")
        claimed = {o for b in bundles_of(self.repo) for o in b.objects}
        deleted = {o for o in before if o not in after}
        assert not deleted & claimed, f"deleted while still in Git: {sorted(deleted & claimed)}"
        outcome = {b.bundle: b for b in result.bundles}
        for b in judged.open:
            done = outcome[b.identity.name]
            assert not done.failed, f"{b.identity.name} failed: {done.reason}: {done.message}"
            for obj, value in b.objects.items():
                assert after.get(obj) == value, f"{obj} of open {b.identity.name} is not live"
        for name in judged.suspended:
            policy = self.cluster.get("policy.karmada.io/v1alpha1", "PropagationPolicy",
                                      self.ns, f"gitgate-{name}")
            assert policy is not None and (policy.get("spec") or {}).get("suspension"), (
                f"{name} is suspended but its policy does not say so")
        for b in judged.blocked:
            done = outcome.get(b.identity.name)
            assert done is None or done.failed or done.verdict in ("held", "suspended"), (
                f"{b.identity.name} should be held or refused, got {done}")
        self.model.after_pass(judged)
        if self.members:
            self.members_run_what_the_model_says()

    def members_run_what_the_model_says(self) -> None:
        """The member the placement names comes to run what the model says (Karmada
        propagates in seconds; a suspended bundle's member keeps what it had); any other
        member runs none of it."""
        deadline = time.monotonic() + self.member_timeout
        for name, member in (self.members or {}).items():
            wanted = self.model.member if name == PLACED else {}
            while (seen := self.live(member)) != wanted:
                assert time.monotonic() < deadline, (
                    f"{name} runs {seen}, the model says {wanted}")
                time.sleep(0.5)

    def teardown(self) -> None:
        """The history's namespace, records and cluster-wide policy go (a real server is
        shared by every history)."""
        for api, kind, ns, name in (
                ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", "",
                 f"gitgate-{self.instance}-ns"),
                ("v1", "Namespace", "", self.ns)):
            self.cluster.delete(api, kind, ns, name)
        for record in self.cluster.list_objects("gitgate.io/v1alpha1", "Bundle",
                                                "gitgate-system"):
            if record["metadata"]["name"].startswith(self.instance + "."):
                self.cluster.delete("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                                    record["metadata"]["name"])

    # ------------------------------------------------------------------ the history's steps
    def step(self) -> None:
        self.counts["steps"] += 1
        self.write_repo()
        self.run_pass()

    @rule(i=st.integers(0, APPS - 1))
    def change(self, i: int) -> None:
        self.version += 1
        app = self.repo.apps[i]
        app.objects = {k: f"v{self.version}" for k in app.objects}
        self.step()

    @rule(i=st.integers(0, APPS - 1), name=st.sampled_from([None, "x", "y"]))
    def rename(self, i: int, name: str | None) -> None:
        self.repo.apps[i].name = None if name is None else f"a{i}-{name}"
        self.step()

    @rule(i=st.integers(0, APPS - 1), team=st.sampled_from([None, "shop", "pay"]))
    def relabel(self, i: int, team: str | None) -> None:
        self.repo.apps[i].team = team
        self.step()

    @rule(i=st.integers(0, APPS - 1), where=st.sampled_from(FOLDERS),
          pause_moves=st.booleans())
    def move(self, i: int, where: str, pause_moves: bool) -> None:
        app = self.repo.apps[i]
        old, app.folder = app.folder, where.format(i=i)
        if pause_moves and old in self.repo.pauses:
            self.repo.pauses.discard(old)
            self.repo.pauses.add(app.folder)
        self.step()

    @rule(i=st.integers(0, APPS - 1))
    def empty_or_restore(self, i: int) -> None:
        self.repo.apps[i].present = not self.repo.apps[i].present
        self.step()

    @rule(src=st.integers(0, APPS - 1), dst=st.integers(0, APPS - 1))
    def move_object(self, src: int, dst: int) -> None:
        a, b = self.repo.apps[src], self.repo.apps[dst]
        if src == dst or len(a.objects) < 2:
            return
        name = sorted(a.objects)[0]
        b.objects[name] = a.objects.pop(name)
        self.step()

    @rule(i=st.integers(0, APPS - 1))
    def pause_folder(self, i: int) -> None:
        folder = self.repo.apps[i].folder
        self.repo.pauses.symmetric_difference_update({folder})
        self.step()

    @rule(i=st.integers(0, APPS - 1), action=ACTIONS, expires=st.booleans())
    def gate_the_bundle(self, i: int, action: str, expires: bool) -> None:
        names = [b.identity.name for b in bundles_of(self.repo)
                 if f"a{i}-" in "".join(b.objects) or b.identity.folder == self.repo.apps[i].folder]
        if names:
            until = self.repo.now + timedelta(hours=2) if expires else None
            self.repo.gates[f"n-{names[0]}"] = GateSpec("name", names[0], action, until)
            self.step()

    @rule(team=st.sampled_from(["shop", "pay"]), action=ACTIONS)
    def gate_the_team(self, team: str, action: str) -> None:
        if self.repo.gates.pop(f"t-{team}", None) is None:
            self.repo.gates[f"t-{team}"] = GateSpec("team", team, action)
        self.step()

    @precondition(lambda self: bool(self.repo.gates))
    @rule(data=st.data())
    def lift_a_gate(self, data) -> None:
        del self.repo.gates[data.draw(st.sampled_from(sorted(self.repo.gates)))]
        self.step()

    @rule()
    def time_passes(self) -> None:
        self.repo.now += timedelta(hours=3)
        self.step()

    @rule()
    def swallow_or_release(self) -> None:
        self.repo.swallowed = not self.repo.swallowed
        self.step()

    @precondition(lambda self: bool(self.repo.pauses or self.repo.gates))
    @rule()
    def lift_every_freeze(self) -> None:
        self.repo.pauses.clear()
        self.repo.gates.clear()
        self.step()
        self.settles()

    def settles(self) -> None:
        """With nothing frozen, two passes bring the cluster to what the commit says."""
        judged = self.model.judge(self.repo)
        if judged.frozen or judged.blocked or judged.suspended:
            return
        self.write_repo()
        self.run_pass()
        self.run_pass()
        wanted = {o: v for b in bundles_of(self.repo) for o, v in b.objects.items()}
        assert self.live() == wanted

    @invariant()
    def the_cluster_holds_what_the_model_says_is_live(self) -> None:
        assert self.live() == self.model.live

