"""The histories the property suite generates: a state machine whose steps are commits to a
Git repo (apps renamed, moved, relabelled, emptied, swallowed by a parent kustomization,
changed, customized per member cluster, made to depend on each other, rolled out in waves
with a bake on the history's clock; OverridePolicies in a platform folder acting on them; a
tenant's folder reaching out of its namespace; `PAUSE` files and gates added, lifted and
approved with the real `gitgate approve`; a freeze pushed while a pass writes; a member
reporting a wave Unhealthy) each followed by a real pass of gitgate against the API
emulator, checked against the reference model (`tests/support/freezemodel.py`) from the
emulator's request log and objects:

- no write or delete touched an object the model says is frozen (a held bundle's own
  OverridePolicies and policy, a platform OverridePolicy acting on it, included);
- after a freeze appeared mid-pass, no write touched what it covers, and only the bundles it
  covers (or that depend on them) stopped;
- nothing a bundle of the commit still claims was deleted;
- a bundle the model says is open runs its content, and gitgate did not fail it; one that
  waits for a dependency failed with `DependencyNotReady` and wrote nothing;
- the cluster holds what the model says is live (templates and OverridePolicies);
- a bundle the model says is suspended has the suspension in its policy;
- a tenant's bundle that reaches out of its tenancy fails (`OutsideTenant`), nothing of it
  written;
- each bundle's Bundle record and `gitgate status -o json` (the real CLI) give the verdict and
  first reason kind the model says;
- once nothing is frozen, two passes bring the cluster to exactly what the commit says."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from ruamel.yaml import YAML

from gitgate.apply.recordformat import bundle_name as record_name
from gitgate.apply.recordformat import from_bundle
from gitgate.apply.work import ApplyOptions
from gitgate.cli import main as gitgate_cli
from gitgate.errors import Reason
from gitgate.karmada.policy import policy_name
from gitgate.passes.onepass import reconcile
from gitgate.progression.latefreeze import NewerFreezes, read_freezes
from gitgate.source.tree import scan_repo
from tests.support.freezemodel import (
    HOLDING_KINDS,
    MEMBERS,
    PLATFORM,
    TENANT_FOLDER,
    App,
    GateSpec,
    Identity,
    Judgement,
    Model,
    Record,
    Repo,
    Rollout,
    Standing,
    bundles_of,
    content_of,
    is_configmap,
    standings,
    target_of,
    tenant_bundle,
    tenant_key,
    workload_key,
)

SEED = os.environ.get("GITGATE_PROPERTY_SEED")  # unset: the same histories every run
EXAMPLES = int(os.environ.get("GITGATE_PROPERTY_EXAMPLES", "12"))
STEPS = int(os.environ.get("GITGATE_PROPERTY_STEPS", "16"))
ACTIONS = st.sampled_from(["hold", "suspend"])
APPS = 3
FOLDERS = ("apps/a{i}", "apps/a{i}/v2", "other/a{i}")
WRITES = ("POST", "PUT", "PATCH", "DELETE")
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/{ns}/"
CLUSTER_OVERRIDES = "/apis/policy.karmada.io/v1alpha1/clusteroverridepolicies/"


def workload_name(folder: str) -> str:
    return "w-" + folder.replace("/", "-")


class EmulatedMember:
    """A member cluster as the emulator's dispatch model has it: what Karmada last sent it
    of each ConfigMap (read like a cluster: `list_objects`)."""

    def __init__(self, state, name: str) -> None:
        self.state, self.name = state, name

    def list_objects(self, api: str, kind: str, namespace: str) -> list[dict]:
        assert (api, kind) == ("v1", "ConfigMap")
        return self.state.member_configmaps(self.name, namespace)


class FreezeHistories(RuleBasedStateMachine):
    """One history: a Git repo, a model, one instance and namespace on the API server
    (the emulator, or Karmada: the requests gitgate sent are read from its own client)."""

    cluster = None  # set by the test: a RecordingKube
    tools = None
    tmp: Path | None = None
    # with a real Karmada: its member clusters, each read after every step
    members: dict | None = None
    kubeconfig: str | None = None  # for `gitgate status`, as a user runs it
    emulator = None  # the API emulator, whose members a step may report on (health)
    member_timeout = 60.0
    counts = {"histories": 0, "steps": 0, "passes": 0, "approvals": 0, "mid-pass": 0,
              "waves": 0, "halts": 0}

    def __init__(self) -> None:
        super().__init__()
        run = "h" + uuid.uuid4().hex[:8]
        assert self.tmp is not None
        self.root = self.tmp / run
        self.instance, self.ns = run, f"{run}-ns"
        self.tenant_ns = f"{run}-t"
        self.repo = Repo(apps={i: App(f"apps/a{i}", {f"a{i}-c0": "v0", f"a{i}-c1": "v0"})
                               for i in range(APPS)})
        self.model = Model()
        self.model.workloads = bool(self.members)
        self.version = 0
        self.counts["histories"] += 1
        self.root.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "history")
        self.git("config", "user.email", "history@example.com")
        self.git("config", "commit.gpgsign", "false")
        self.write_repo()
        self.run_pass()

    # ------------------------------------------------------------------ the repo's files
    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.root, check=True, capture_output=True,
                              text=True).stdout

    def files(self, repo: Repo) -> dict[str, str]:
        members = ", ".join(MEMBERS)
        files = {"gitgate.yaml": "defaults: {placement: {clusterAffinity: "
                                 f"{{clusterNames: [{members}]}}}}}}\n"
                                 f"tenants:\n  - {{name: team-t, paths: ['{TENANT_FOLDER}/**'], "
                                 f"namespaces: ['{self.tenant_ns}']}}\n",
                 "ns/bundle.yaml": f"name: {self.instance}-ns\n",
                 "ns/ns.yaml": "".join("---\napiVersion: v1\nkind: Namespace\n"
                                       f"metadata: {{name: {ns}}}\n"
                                       for ns in (self.ns, self.tenant_ns))}
        files[f"{TENANT_FOLDER}/cm.yaml"] = "".join(
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, "
            f"namespace: {self.tenant_ns}}}\ndata: {{value: '{value}'}}\n"
            for name, value in sorted(repo.tenant.items()))
        if repo.trespass == "namespace":  # a ConfigMap in the apps' namespace
            files[f"{TENANT_FOLDER}/out.yaml"] = (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t-out, namespace: "
                f"{self.ns}}}\ndata: {{value: '{repo.tenant['t0-c0']}'}}\n")
        elif repo.trespass == "cluster-override":  # acting on an app's ConfigMap
            files[f"{TENANT_FOLDER}/out.yaml"] = (
                "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterOverridePolicy\n"
                "metadata: {name: t-out}\nspec:\n  resourceSelectors: [{apiVersion: v1, "
                f"kind: ConfigMap, namespace: {self.ns}, name: a0-c1}}]\n  overrideRules:\n"
                "    - overriders: {plaintext: [{operator: replace, path: /data/value, "
                f"value: '{repo.tenant['t0-c0']}'}}]}}\n")
        for app in repo.apps.values():
            if app.present:
                files[f"{app.folder}/cm.yaml"] = "".join(
                    f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, "
                    f"namespace: {self.ns}}}\ndata: {{value: '{value}'}}\n"
                    for name, value in sorted(app.objects.items()))
                said = [f"name: {app.name}"] if app.name else []
                said += [f"labels: {{team: {app.team}}}"] if app.team else []
                said += [f"dependsOn: ['{app.depends_on}']"] if app.depends_on else []
                said += [f"rollout: {{waves: [{{clusters: [{MEMBERS[0]}]}}, {{clusters: "
                         f"[{MEMBERS[1]}]}}], bake: 4h}}"] if app.rollout else []
                if app.rollout and self.members and not (
                        repo.swallowed and app.folder.startswith("apps/")):
                    files[f"{app.folder}/w.yaml"] = self.workload(app.folder)
                if app.custom is not None:
                    said.append(f"clusters:\n  - clusters: [{MEMBERS[1]}]\n    patches:\n"
                                "      - target: {kind: ConfigMap}\n        patch: [{op: "
                                f"replace, path: /data/value, value: '{app.custom}'}}]")
                if said:
                    files[f"{app.folder}/bundle.yaml"] = "\n".join(said) + "\n"
        for target, value in repo.platform.items():
            files[f"{PLATFORM}/p-{target}.yaml"] = (
                "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\n"
                f"metadata: {{name: p-{target}, namespace: {self.ns}}}\n"
                "spec:\n  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: "
                f"{target}}}]\n  overrideRules:\n    - targetCluster: {{clusterNames: "
                f"[{MEMBERS[0]}]}}\n      overriders: {{plaintext: [{{operator: replace, "
                f"path: /data/value, value: '{value}'}}]}}\n")
        for folder in repo.pauses:
            files[f"{folder}/PAUSE"] = "frozen by the history\n"
        for file, spec in repo.gates.items():
            selector = (f"bundles: ['{spec.value}']" if spec.by == "name"
                        else f"selector: {{matchLabels: {{team: {spec.value}}}}}")
            until = f", until: '{spec.until.isoformat()}'" if spec.until else ""
            approve = ", approve: [{}]".format(", ".join(
                f"{{bundle: '{b}', digest: '{d}'}}" for b, d, _ in spec.approvals)
            ) if spec.approvals else ""
            files[f"gates/{file}.yaml"] = self.gate(
                file, f"{selector}, action: {spec.action}{until}{approve}")
        if repo.swallowed:
            below = sorted(f"{a.folder.removeprefix('apps/')}/cm.yaml"
                           for a in repo.apps.values()
                           if a.present and a.folder.startswith("apps/"))
            if below:
                files["apps/kustomization.yaml"] = f"resources: [{', '.join(below)}]\n"
        return files

    def write_repo(self, repo: Repo | None = None, root: Path | None = None) -> None:
        """The commit: the repo's files as `repo` says, committed (into the history's Git
        repo; `root`: a plain folder for a newer commit's freeze files)."""
        root = root or self.root
        for entry in root.iterdir() if root.exists() else ():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        for rel, text in self.files(repo or self.repo).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        if root == self.root:
            self.git("add", "-A")
            self.git("commit", "-q", "--allow-empty", "-m", f"step {self.counts['steps']}")

    def workload(self, folder: str) -> str:
        """A rolling app's Deployment on a real Karmada (its spec never changes): what its
        member clusters report health for."""
        name = workload_name(folder)
        return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: "
                f"{self.ns}}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}"
                f"\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec: "
                "{containers: [{name: app, image: 'registry.k8s.io/pause:3.9'}]}\n")

    @staticmethod
    def gate(name: str, selector: str) -> str:
        return (f"apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {{name: {name}}}\n"
                f"spec: {{{selector}, reason: a freeze of the history}}\n")

    # ------------------------------------------------------------------ what is live
    def key(self, path: str) -> str | None:
        """The model's name of the object a request path names (None: not one it follows)."""
        configmaps = f"/api/v1/namespaces/{self.ns}/configmaps/"
        policies = POLICIES.format(ns=self.ns)
        if path.startswith(configmaps):
            return path.removeprefix(configmaps)
        if path.startswith(theirs := f"/api/v1/namespaces/{self.tenant_ns}/configmaps/"):
            return tenant_key(path.removeprefix(theirs))
        if path.startswith(CLUSTER_OVERRIDES):
            return "cop/" + path.removeprefix(CLUSTER_OVERRIDES)
        if path.startswith(policies + "overridepolicies/"):
            name = self.generated(path.removeprefix(policies + "overridepolicies/"))
            return ("op/" if name.startswith("gitgate-") else "pop/") + name
        if path.startswith(policies + "propagationpolicies/"):
            return "pp/" + self.generated(path.removeprefix(policies + "propagationpolicies/"))
        return None

    def generated(self, name: str) -> str:
        """A policy's name as the model says it: the instance's generated
        `gitgate.<instance>.<rest>` as `gitgate-<rest>`."""
        mine = f"gitgate.{self.instance}."
        return "gitgate-" + name.removeprefix(mine) if name.startswith(mine) else name

    def live(self, cluster=None) -> dict[str, str]:
        """The ConfigMaps of the history's namespace (the templates, or a member's) and, on
        the control plane, its OverridePolicies (the value each sets)."""
        cluster = cluster or self.cluster
        out = {o["metadata"]["name"]: (o.get("data") or {}).get("value", "")
               for o in cluster.list_objects("v1", "ConfigMap", self.ns)
               if o["metadata"]["name"] != "kube-root-ca.crt"}
        out.update({tenant_key(o["metadata"]["name"]): (o.get("data") or {}).get("value", "")
                    for o in cluster.list_objects("v1", "ConfigMap", self.tenant_ns)
                    if o["metadata"]["name"] != "kube-root-ca.crt"})
        if cluster is self.cluster:
            for o in cluster.list_objects("policy.karmada.io/v1alpha1", "OverridePolicy",
                                          self.ns):
                name = self.generated(o["metadata"]["name"])
                rules = (o.get("spec") or {}).get("overrideRules") or [{}]
                plain = ((rules[0].get("overriders") or {}).get("plaintext") or [{}])[0]
                out[("op/" if name.startswith("gitgate-") else "pop/") + name] = str(
                    plain.get("value", ""))
        return out

    def record(self, name: str) -> Record | None:
        """A bundle's record as gitgate left it on the API server (after a pass a freeze
        stopped mid-way, where the model cannot say how far it got)."""
        obj = self.cluster.get("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                               record_name(name, self.instance))
        if obj is None:
            return None
        inventory = from_bundle(obj)
        objects = set()
        for entry in inventory.entries:
            path = (f"/api/v1/namespaces/{entry.namespace}/configmaps/{entry.name}"
                    if entry.kind == "ConfigMap" else
                    POLICIES.format(ns=entry.namespace) + f"overridepolicies/{entry.name}"
                    if entry.kind == "OverridePolicy" else "")
            if (found := self.key(path)) is not None:
                objects.add(found)
        labels = dict(inventory.labels)
        return Record(Identity(name, labels.get("team"), inventory.source), objects,
                      applied=bool(inventory.applied_digest))

    # ------------------------------------------------------------------ a pass
    def run_pass(self, newer: Repo | None = None, at: int = 0) -> None:
        """A real pass over the commit, checked. With `newer`: a commit adding a freeze is
        pushed after the pass's `at`-th write, and the pass learns of it before its next
        write or delete (as `gitgate run` does when it looks at the remote)."""
        judged = self.model.judge(self.repo)
        before = self.live()
        start = len(self.cluster.sent)
        appeared: list[int] = []
        late = None
        if newer is not None:
            freezes = self.newer_freezes(newer)

            def late() -> NewerFreezes | None:
                if not appeared:
                    if sum(1 for m, _, _, dry in self.cluster.sent[start:]
                           if m in WRITES and not dry) < at:
                        return None
                    appeared.append(len(self.cluster.sent))
                return freezes

        result = reconcile(self.root, self.tools, self.cluster, ApplyOptions(
            now=self.repo.now, instance=self.instance, allow_mass_prune=True,
            concurrency=1 if newer is not None else 8), late=late).result
        self.counts["passes"] += 1
        assert result is not None
        self.last_result = result
        touched = {k for method, path, _, dry in self.cluster.sent[start:]
                   if method in WRITES and not dry and (k := self.key(path)) is not None}
        after = self.live()
        never = judged.frozen | judged.kept | {f"pp/gitgate-{name}" for name in judged.held}
        if judged.refused:  # nothing of a bundle reaching out of its tenancy is written
            never |= {"t-out", "cop/t-out"} | set(tenant_bundle(self.repo).objects)
        assert not touched & never, (
            f"frozen objects written: {sorted(touched & never)}; repo {self.repo}")
        claimed = {o for b in bundles_of(self.repo) for o in b.objects}
        deleted = {o for o in before if o not in after}
        assert not deleted & claimed, f"deleted while still in Git: {sorted(deleted & claimed)}"
        outcome = {b.bundle: b for b in result.bundles}
        stopped: set[str] = set()
        if newer is not None and appeared:
            stopped = self.stopped_mid_pass(judged, newer, outcome, appeared[0])
        for b in judged.open:
            done = outcome[b.identity.name]
            if b.identity.name in stopped:
                continue
            assert not done.failed, f"{b.identity.name} failed: {done.reason}: {done.message}"
            for obj, value in b.objects.items():
                if obj not in judged.kept:
                    assert after.get(obj) == value, f"{obj} of open {b.identity.name} not live"
        for name in judged.suspended - stopped:
            policy = self.cluster.get("policy.karmada.io/v1alpha1", "PropagationPolicy",
                                      self.ns, policy_name(name, self.instance))
            assert policy is not None and (policy.get("spec") or {}).get("suspension"), (
                f"{name} is suspended but its policy does not say so")
        for b in judged.blocked:
            done = outcome.get(b.identity.name)
            assert done is None or done.failed or done.verdict in ("held", "suspended"), (
                f"{b.identity.name} should be held or refused, got {done}")
        for name in judged.refused:
            done = outcome[name]
            assert done.failed and done.reason == Reason.OUTSIDE_TENANT, (
                f"{name} reaches out of its tenancy, got {done}")
        for name, why in judged.waiting.items():
            done = outcome[name]
            assert done.failed and done.reason == Reason.DEPENDENCY_NOT_READY, (
                f"{name} should wait for its dependency ({why}), got {done}")
        self.records_and_status_agree(standings(self.repo, judged, self.model.records), stopped)
        had = {name: r.objects.copy() for name, r in self.model.records.items()}
        suspended = {name for name, r in self.model.records.items() if r.suspended}
        for name, rollout in judged.rollouts.items():  # for the suite's summary
            was = self.model.rollouts.get(name)
            if was is not None and was.content == rollout.content and name not in stopped:
                self.counts["waves"] += rollout.wave > was.wave
                self.counts["halts"] += bool(rollout.halted) and not was.halted
        self.model.after_pass(judged, stopped)
        for name in sorted(stopped):
            self.adopt(name, judged, had.get(name, set()), name in suspended, before, after)
        self.rollouts_are_where_the_model_says(judged, stopped)
        self.members_run_what_the_model_says()
        if self.members:
            self.members_report_health()

    def records_and_status_agree(self, wanted: dict[str, Standing], stopped: set[str]) -> None:
        """Each bundle's record on the API server and `gitgate status -o json` (the real CLI)
        say what the model says of it: its verdict, and the kind of its first reason (but
        for the bundles a freeze stopped mid-pass, as far as they got)."""
        assert self.kubeconfig is not None, "the history's test sets its kubeconfig"
        said = io.StringIO()
        handler = signal.getsignal(signal.SIGTERM)  # the CLI installs its own
        try:
            with contextlib.redirect_stdout(said):
                code = gitgate_cli(["status", "--kubeconfig", str(self.kubeconfig),
                                    "--instance", self.instance, "-o", "json"],
                                   clock=lambda: self.repo.now)
        finally:
            signal.signal(signal.SIGTERM, handler)
        assert code == 0, f"gitgate status exited {code}: {said.getvalue()[-2000:]}"
        status = {b["name"]: b for b in json.loads(said.getvalue())["bundles"]}
        for name, standing in sorted(wanted.items()):
            if name in stopped:
                continue
            obj = self.cluster.get("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                                   record_name(name, self.instance))
            assert obj is not None, f"{name} has no record; the model says {standing}"
            recorded = obj.get("status") or {}
            for where, doc in (("record", recorded), ("status -o json", status.get(name))):
                assert doc is not None, f"{name} missing from {where}"
                kinds = [str(r.get("kind")) for r in doc.get("reasons") or []]
                assert doc.get("verdict") in standing.verdicts(), (
                    f"{name}: {where} says {doc.get('verdict')} ({kinds}), the model "
                    f"{standing.verdict}; repo {self.repo}")
                if doc.get("verdict") == "apply":
                    assert not set(kinds) & HOLDING_KINDS, (
                        f"{name}: {where} gives holding reasons {kinds} for an open bundle")
                elif standing.first:
                    assert kinds and kinds[0] in standing.first, (
                        f"{name}: {where} gives {kinds} first, the model {standing.first}")

    def newer_freezes(self, newer: Repo) -> NewerFreezes:
        """The freeze files of the newer commit, read as the loop reads a newer head's."""
        folder = self.root.with_name(self.root.name + "-newer")
        folder.mkdir(exist_ok=True)
        self.write_repo(newer, folder)
        return read_freezes(f"newer-{self.counts['steps']}", scan_repo(folder))

    def stopped_mid_pass(self, judged: Judgement, newer: Repo, outcome: dict,
                         appeared: int) -> set[str]:
        """What a freeze that appeared mid-pass stopped: no write after it appeared touched
        what it covers (README: a bundle it covers, or whose overrides act on one, gets
        nothing more written or pruned; the others go on). Returns the bundles of the
        judgement's open ones (and records) that gitgate stopped."""
        covers = self.model.newly_covered(self.repo, newer)
        bundles = bundles_of(self.repo)
        stopping = {b.identity.name for b in bundles if b.identity.name in covers}
        objects = set()
        for b in bundles:
            if b.identity.name in stopping or (b.identity.name == PLATFORM and any(
                    target_of(k) in o.objects for k in b.objects for o in bundles
                    if o.identity.name in stopping)):
                stopping.add(b.identity.name)
                objects |= set(b.objects) | {f"pp/gitgate-{b.identity.name}"}
        for name, record in self.model.records.items():
            if name in covers or name in stopping:
                objects |= record.objects
        late = {k for method, path, _, dry in self.cluster.sent[appeared:]
                if method in WRITES and not dry and (k := self.key(path)) is not None}
        assert not late & objects, (
            f"written after a freeze appeared mid-pass: {sorted(late & objects)}; "
            f"the freeze: {newer}")
        failed = {name for name, b in outcome.items() if b.failed}
        waits = {b.identity.name: b.depends_on for b in bundles}
        stopped = set()
        for b in judged.open:
            name = b.identity.name
            if name not in failed:
                continue
            chain, need = [], waits.get(name)
            while need is not None and need not in chain:
                chain.append(need)
                need = waits.get(need)
            assert name in stopping or failed & set(chain), (
                f"{name} stopped by a freeze that does not cover it: "
                f"{outcome[name].reason}: {outcome[name].message}")
            stopped.add(name)
        return stopped | {name for name in judged.gone if name in covers}

    def adopt(self, name: str, judged: Judgement, had: set[str], suspended: bool,
              before: dict[str, str], after: dict[str, str]) -> None:
        """A bundle a freeze stopped mid-pass is as far as it got: each of its objects has
        its old or its new content (or is gone, if it left Git), and its record (read from
        the API server) lists only objects it had or has."""
        record = self.record(name)
        if record is not None:
            record.suspended = suspended or name in judged.suspended  # as far as known
        now = next((b.objects for b in judged.open if b.identity.name == name), {})
        if record is not None:
            assert record.objects <= had | set(now), (
                f"{name}'s record lists {sorted(record.objects - had - set(now))}")
        claimed = {o for b in bundles_of(self.repo) for o in b.objects}
        values: dict[str, str | None] = {}
        for key in had | set(now) | (record.objects if record else set()):
            if key in after:
                assert after[key] in (before.get(key), now.get(key)), (
                    f"{key} of {name} is neither old nor new: {after[key]}")
                values[key] = after[key]
            elif key not in claimed:
                values[key] = None
        self.model.adopt(name, record, values)
        rolling = next((b for b in judged.open if b.identity.name == name and b.rollout), None)
        if rolling is not None and record is not None:
            policy = self.cluster.get("policy.karmada.io/v1alpha1", "PropagationPolicy",
                                      self.ns, policy_name(name, self.instance))
            suspension = ((policy or {}).get("spec") or {}).get("suspension") or {}
            record.waiting_on = frozenset(
                (suspension.get("dispatchingOnClusters") or {}).get("clusterNames") or ())
            record.suspended = bool(suspension.get("dispatching"))
            self.model.rollouts[name] = Rollout(judged.contents[name], 0, self.repo.now,
                                                unknown=True)
            self.model.dispatch()

    def member_clusters(self) -> dict:
        """Each member cluster, to read what it runs: Karmada's, or the emulator's dispatch
        model of it."""
        if self.members:
            return self.members
        if self.emulator is None:
            return {}
        return {name: EmulatedMember(self.emulator.state, name) for name in MEMBERS}

    def members_report_health(self) -> None:
        """On a real Karmada, whose members run no controllers: each rolling app's Deployment
        on each member reports what the history says (Available since the history's clock
        now, or Unhealthy: fewer updated and available replicas than its spec), and the step
        waits until Karmada reflects it in the Deployment's binding."""
        folders = {a.folder for a in self.repo.apps.values() if a.rollout and a.present
                   and not (self.repo.swallowed and a.folder.startswith("apps/"))}
        self.model.unhealthy = {(o, m) for o, m in self.model.unhealthy
                                if not o.startswith("w:") or o.removeprefix("w:") in folders}
        owners = {b.identity.folder: b.identity.name for b in bundles_of(self.repo)}
        for folder in sorted(folders):
            name = workload_name(folder)
            for member, cluster in (self.members or {}).items():
                live = cluster.get("apps/v1", "Deployment", self.ns, name)
                if live is None and self.dispatched(owners.get(folder), name, member):
                    deadline = time.monotonic() + self.member_timeout
                    while (live := cluster.get("apps/v1", "Deployment", self.ns, name)) is None:
                        assert time.monotonic() < deadline, f"{name} never reached {member}"
                        time.sleep(0.5)
                if live is None:
                    continue
                sick = (workload_key(folder), member) in self.model.unhealthy
                generation = live["metadata"]["generation"]
                status = live.get("status") or {}
                if status.get("observedGeneration") == generation and bool(
                        status.get("availableReplicas")) != sick:
                    continue
                ready = 0 if sick else 1
                when = self.repo.now.strftime("%Y-%m-%dT%H:%M:%SZ")
                path = cluster.path_for("apps/v1", "Deployment", self.ns, name) + "/status"
                code, body = cluster.request("PATCH", path, body={"status": {
                    "observedGeneration": generation, "replicas": 1, "updatedReplicas": ready,
                    "readyReplicas": ready, "availableReplicas": ready,
                    "conditions": [{"type": "Available", "status": "False" if sick else "True",
                                    "reason": "History", "lastTransitionTime": when,
                                    "lastUpdateTime": when}]}},
                    content_type="application/merge-patch+json")
                assert code == 200, body
                self.reflected(name, member, "Unhealthy" if sick else "Healthy")

    def dispatched(self, bundle: str | None, name: str, member: str) -> bool:
        """Whether Karmada sends `member` the Deployment `name`: its bundle's record (on the
        API server) has it live, and the model says the bundle's dispatch there goes on."""
        record = self.model.records.get(bundle or "")
        if record is None or record.suspended or member in record.waiting_on:
            return False
        obj = self.cluster.get("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                               record_name(bundle or "", self.instance))
        return obj is not None and any(e.kind == "Deployment" and e.name == name
                                       for e in from_bundle(obj).entries)

    def reflected(self, name: str, member: str, health: str) -> None:
        deadline = time.monotonic() + self.member_timeout
        while True:
            binding = self.cluster.get("work.karmada.io/v1alpha2", "ResourceBinding", self.ns,
                                       f"{name}-deployment")
            items = ((binding or {}).get("status") or {}).get("aggregatedStatus") or []
            if any(i.get("clusterName") == member and i.get("health") == health
                   for i in items):
                return
            assert time.monotonic() < deadline, f"{name} on {member} is not {health}: {items}"
            time.sleep(0.5)

    def members_run_what_the_model_says(self) -> None:
        """Each member comes to run what the model says (Karmada propagates in seconds; a
        suspended bundle's member, and one its rollout has not released, keeps what it had;
        the customizations and the platform's overrides applied on their member). A rolling
        bundle a freeze stopped mid-pass runs as far as it got: the model takes that over."""
        deadline = time.monotonic() + self.member_timeout
        unknown = {o for name, r in self.model.rollouts.items() if r.unknown
                   for o in (self.model.records[name].objects
                             if name in self.model.records else ())}
        for name, member in self.member_clusters().items():
            wanted = self.model.member.get(name, {})  # a member not placed runs none
            while True:
                seen = self.live(member)
                for obj in unknown:
                    if obj in seen:
                        wanted[obj] = seen[obj]
                    else:
                        wanted.pop(obj, None)
                if seen == wanted:
                    break
                assert time.monotonic() < deadline, (
                    f"{name} runs {seen}, the model says {wanted}; rollouts "
                    f"{self.model.rollouts}; repo {self.repo}")
                time.sleep(0.5)

    def rollouts_are_where_the_model_says(self, judged: Judgement, stopped: set[str]) -> None:
        """Each rolling bundle's record keeps its rollout where the model says: the wave
        being released (2: complete) and whether, and why, it halted."""
        for name, rollout in judged.rollouts.items():
            if name in stopped or rollout.unknown or name not in self.model.records:
                continue
            obj = self.cluster.get("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                                   record_name(name, self.instance))
            text = ((obj or {}).get("status") or {}).get("rollout")
            assert text, f"{name} rolls out, but its record keeps no rollout; model {rollout}"
            state = json.loads(text)
            halted = str(state.get("halted") or "")
            why = ("unhealthy" if "Unhealthy while baking" in halted else
                   "deadline" if "progressDeadline" in halted else halted)
            assert (state.get("wave"), why) == (rollout.wave, rollout.halted), (
                f"{name}'s rollout is at wave {state.get('wave')} halted {halted!r}; the model "
                f"says wave {rollout.wave} halted {rollout.halted!r} ({rollout}); repo "
                f"{self.repo}")

    def teardown(self) -> None:
        """The history's namespace, records and cluster-wide policy go (a real server is
        shared by every history)."""
        for api, kind, ns, name in (
                ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", "",
                 policy_name(f"{self.instance}-ns", self.instance)),
                ("v1", "Namespace", "", self.ns), ("v1", "Namespace", "", self.tenant_ns)):
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

    def bundle_of(self, i: int) -> str | None:
        """The name of the bundle app `i` is part of now (None: its folder is empty)."""
        names = [b.identity.name for b in bundles_of(self.repo) if b.identity.name != PLATFORM
                 and (any(o.startswith(f"a{i}-") for o in b.objects if is_configmap(o))
                      or b.identity.folder == self.repo.apps[i].folder)]
        return names[0] if names else None

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

    @rule()
    def pause_every_app(self) -> None:
        """A `PAUSE` in `apps/` (or its removal): it holds every app at or below it."""
        self.repo.pauses.symmetric_difference_update({"apps"})
        self.step()

    @rule(i=st.integers(0, APPS - 1), action=ACTIONS, expires=st.booleans())
    def gate_the_bundle(self, i: int, action: str, expires: bool) -> None:
        name = self.bundle_of(i)
        if name is not None:
            until = self.repo.now + timedelta(hours=2) if expires else None
            self.repo.gates[f"n-{name}"] = GateSpec("name", name, action, until)
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

    @rule(i=st.integers(0, APPS - 1), on=st.booleans())
    def customize(self, i: int, on: bool) -> None:
        """`clusters:` in the app's bundle.yaml: every ConfigMap another value on member2
        (or the entry removed)."""
        self.version += 1
        self.repo.apps[i].custom = f"m{self.version}" if on else None
        self.step()

    @rule(i=st.integers(0, APPS - 1))
    def roll_out(self, i: int) -> None:
        """App `i` gains (or loses) `rollout:` waves, member1 then member2, with a 4h bake on
        the history's clock (`time_passes` moves it 3h), and changes its content: the bundle
        rolls out wave by wave (README "Progressive rollouts"), its customizations and the
        overrides acting on it staying live throughout. On a real Karmada the app carries a
        Deployment too, whose health its members report."""
        self.version += 1
        app = self.repo.apps[i]
        app.rollout = not app.rollout
        app.objects = {k: f"v{self.version}" for k in app.objects}
        self.step()

    @rule(i=st.integers(0, APPS - 1), bakes=st.integers(1, 4), sick=st.booleans())
    def roll_out_and_bake(self, i: int, bakes: int, sick: bool) -> None:
        """`roll_out`, then `bakes` times `time_passes` (with `sick`: member1 reports the app
        Unhealthy after the first): the rollout gets as far as its waves, bake and health
        let it."""
        self.roll_out(i)
        for n in range(bakes):
            self.time_passes()
            if sick and n == 0:
                self.health_flips(i, "Unhealthy")

    @rule(i=st.integers(0, APPS - 1), health=st.sampled_from(["Unhealthy", "Healthy"]))
    def health_flips(self, i: int, health: str) -> None:
        """Member1 reports app `i`'s first ConfigMap `health` (the emulator acting as its
        controllers; on a real Karmada, the rolling app's Deployment status there): a rollout
        baking there halts; nothing else changes."""
        app = self.repo.apps[i]
        if self.members:
            if not app.rollout or not app.present or (
                    self.repo.swallowed and app.folder.startswith("apps/")):
                return
            key = (workload_key(app.folder), MEMBERS[0])
            if health == "Unhealthy":
                self.model.unhealthy.add(key)
            else:
                self.model.unhealthy.discard(key)
            self.members_report_health()
            self.step()
            return
        name = sorted(app.objects)[0]
        if self.emulator is None or name not in self.live():
            return
        try:
            self.emulator.state.report(self.ns, "ConfigMap", name, MEMBERS[0], health=health)
        except KeyError:  # no binding (yet) for it on that member
            return
        if health == "Unhealthy":
            self.model.unhealthy.add((name, MEMBERS[0]))
        else:
            self.model.unhealthy.discard((name, MEMBERS[0]))
        self.step()

    @rule(how=st.sampled_from([None, "namespace", "cluster-override"]))
    def tenant_reaches_out(self, how: str | None) -> None:
        """The tenant's folder changes its ConfigMaps and, with `how`, reaches out of its
        tenancy: a ConfigMap in the apps' namespace, or a ClusterOverridePolicy acting on
        app 0's ConfigMap (README "Tenants": the bundle fails, nothing of it is written,
        what it wrote before stays)."""
        self.version += 1
        self.repo.tenant = {k: f"v{self.version}" for k in self.repo.tenant}
        self.repo.trespass = how
        self.step()

    @rule(i=st.integers(0, APPS - 1), on=st.booleans())
    def override_from_platform(self, i: int, on: bool) -> None:
        """An OverridePolicy in the platform folder changing `a<i>-c1` on member1 (or
        removed), whichever bundle has that ConfigMap."""
        self.version += 1
        if on:
            self.repo.platform[f"a{i}-c1"] = f"p{self.version}"
        elif self.repo.platform.pop(f"a{i}-c1", None) is None:
            return
        self.step()

    @rule(i=st.integers(0, APPS - 1), j=st.sampled_from([None, 0, 1, 2]))
    def depend(self, i: int, j: int | None) -> None:
        """App `i` depends on the bundle app `j` is part of now (None: on nothing)."""
        app = self.repo.apps[i]
        app.depends_on = None if j is None else (
            self.bundle_of(j) or self.repo.apps[j].name or self.repo.apps[j].folder.replace(
                "/", "-"))
        self.step()

    def approvable(self) -> list[str]:
        """The bundles an active gate covers as the commit names them."""
        return sorted(b.identity.name for b in bundles_of(self.repo) if any(
            g.active(self.repo.now) and g.selects(b.identity) for g in self.repo.gates.values()))

    @precondition(lambda self: bool(self.approvable()))
    @rule(data=st.data())
    def approve(self, data) -> None:
        """`gitgate approve` on a bundle a gate covers: the real CLI on the history's repo
        writes the digest of its committed content into every active gate covering it, and
        commits; that content goes through those gates, a later change does not."""
        self.approve_bundle(data.draw(st.sampled_from(self.approvable())))

    @rule(i=st.integers(0, APPS - 1))
    def hold_and_approve(self, i: int) -> None:
        """A gate holds the bundle app `i` is part of (one commit, one pass), then `gitgate
        approve` lets its content through."""
        name = self.bundle_of(i)
        if name is not None:
            self.repo.gates[f"n-{name}"] = GateSpec("name", name)
            self.step()
            self.approve_bundle(name)

    def approve_bundle(self, name: str) -> None:
        bundles = bundles_of(self.repo)
        bundle = next(b for b in bundles if b.identity.name == name)
        holding = sorted(f for f, g in self.repo.gates.items()
                         if g.active(self.repo.now) and g.selects(bundle.identity))
        handler = signal.getsignal(signal.SIGTERM)  # the CLI installs its own
        try:
            code = gitgate_cli(["approve", name, "--repo", str(self.root)],
                               clock=lambda: self.repo.now)
        finally:
            signal.signal(signal.SIGTERM, handler)
        assert code == (0 if holding else 2), f"approve {name} exited {code}"
        self.counts["approvals"] += bool(holding)
        content = content_of(bundle, bundles)
        for file in holding:
            spec = YAML(typ="safe").load((self.root / "gates" / f"{file}.yaml").read_text())
            entries = spec["spec"]["approve"]
            entries = [entries] if isinstance(entries, dict) else entries
            digest = next(e["digest"] for e in entries if e["bundle"] == name)
            gate = self.repo.gates[file]
            self.repo.gates[file] = replace(gate, approvals=tuple(
                a for a in gate.approvals if a[0] != name) + ((name, digest, content),))
        self.step()

    @rule(i=st.integers(0, APPS - 1), how=st.sampled_from(["name", "team", "pause"]),
          action=ACTIONS, at=st.integers(0, 14))
    def push_mid_pass(self, i: int, how: str, action: str, at: int) -> None:
        """Every app changes; while the pass writes them, a freeze of app `i`'s bundle (by
        name, by its team, or a `PAUSE` in its folder) is pushed after the `at`-th write.
        The next step's commit has it."""
        self.version += 1
        for app in self.repo.apps.values():
            app.objects = {k: f"v{self.version}" for k in app.objects}
        newer = Repo(apps=self.repo.apps, pauses=set(self.repo.pauses),
                     gates=dict(self.repo.gates), swallowed=self.repo.swallowed,
                     platform=self.repo.platform, now=self.repo.now,
                     tenant=self.repo.tenant, trespass=self.repo.trespass)
        name, app = self.bundle_of(i), self.repo.apps[i]
        if how == "pause":
            newer.pauses.add(app.folder)
        elif how == "team" and app.team is not None:
            newer.gates[f"t-{app.team}"] = GateSpec("team", app.team, action)
        elif name is not None:
            newer.gates[f"n-{name}"] = GateSpec("name", name, action)
        self.counts["steps"] += 1
        self.counts["mid-pass"] += 1
        self.write_repo()
        self.run_pass(newer, at)
        self.repo = newer
        self.write_repo()  # the newer commit is the head now; the next step's pass judges it

    @precondition(lambda self: bool(self.repo.pauses or self.repo.gates))
    @rule()
    def lift_every_freeze(self) -> None:
        self.repo.pauses.clear()
        self.repo.gates.clear()
        self.step()
        self.settles()

    def settles(self) -> None:
        """With nothing frozen and no rollout under way (its unreleased members keep what
        left Git), two passes bring the cluster to what the commit says."""
        judged = self.model.judge(self.repo)
        if judged.frozen or judged.blocked or judged.suspended or judged.waiting or \
                judged.kept or judged.refused or any(
                    not r.complete() for r in judged.rollouts.values()):
            return
        self.write_repo()
        self.run_pass()
        self.run_pass()
        wanted = {o: v for b in bundles_of(self.repo) for o, v in b.objects.items()}
        assert self.live() == wanted

    @invariant()
    def the_cluster_holds_what_the_model_says_is_live(self) -> None:
        assert self.live() == self.model.live
