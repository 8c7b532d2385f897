"""Rendering per shard (`run --shard`): a replica keeps the sources of other replicas as
summaries (`bundle.summary`), and plans its own bundles exactly as a replica planning the
whole repo would. Every rule that reaches across sources is in the repo below, and every
split of its sources between "mine" and "elsewhere" is tried. A real folder of raw YAML, no
tools needed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitgate.bundle import deps
from gitgate.bundle.summary import summarized
from gitgate.errors import Reason
from gitgate.model.shardmap import ShardMap, unit_of
from gitgate.passes.onepass import plan_checkout
from gitgate.render.cache import RenderCache
from gitgate.render.diskcache import RenderDisk
from tests.conftest import write_files
from tests.support.manifests import crd_yaml

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def deployment(name: str, labels: str = "{}", spec_extra: str = "") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: web, labels: {labels}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      serviceAccountName: {name}-sa
      imagePullSecrets: [{{name: pull}}]
      volumes:
        - {{name: c, configMap: {{name: shared-cfg}}}}
        - {{name: d, persistentVolumeClaim: {{claimName: {name}-data}}}}
      containers:
        - name: {name}
          image: {name}:1
          env: [{{name: K, valueFrom: {{secretKeyRef: {{name: {name}-key, key: k}}}}}}]
{spec_extra}"""


def cm(name: str, labels: str = "{}", value: str = "1") -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: web, "
            f"labels: {labels}}}\ndata: {{v: '{value}'}}\n")


def override(name: str, selects: str, cluster: str, replicas: int) -> str:
    """An OverridePolicy in `web` setting the replicas of the Deployments it selects."""
    return f"""\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {{name: {name}, namespace: web}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, {selects}}}]
  overrideRules:
    - targetCluster: {{clusterNames: [{cluster}]}}
      overriders: {{plaintext: [{{path: /spec/replicas, operator: replace, value: {replicas}}}]}}
"""


REPO = {
    "gitgate.yaml": ("gatesPath: gates\ndefaults:\n  placement: {clusterAffinity: "
                     "{clusterNames: [member1, member2]}}\n"),
    # a hold on app-a holds what its Deployment uses, wherever it is committed (config)
    "gates/hold-a.yaml": """\
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {name: hold-a}
        spec: {bundles: [app-a], action: hold, reason: "INC-7"}
        """,
    "ns/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n",
    "config/cm.yaml": cm("shared-cfg"),
    "app-a/deploy.yaml": deployment("app-a"),
    "app-a/secret.yaml": ("apiVersion: v1\nkind: Secret\nmetadata: {name: app-a-key, "
                              "namespace: web}\nstringData: {k: canary-value}\n"),
    "app-b/deploy.yaml": deployment("app-b", "{tier: gold}"),
    # an override committed elsewhere acts on app-b: app-b's digest covers it
    "overrides/op.yaml": override("gold", "labelSelector: {matchLabels: {tier: gold}}",
                                  "member2", 1),
    # an override acting on the held app-a is held with it
    "overrides-a/op.yaml": override("on-a", "name: app-a", "member1", 2),
    # a propagation policy selecting another bundle's object takes it over: its source fails
    "hijack/pp.yaml": """\
        apiVersion: policy.karmada.io/v1alpha1
        kind: PropagationPolicy
        metadata: {name: grab, namespace: web}
        spec:
          resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: shared-cfg}]
          placement: {clusterAffinity: {clusterNames: [member1]}}
        """,
    # one object from two sources: both fail
    "dup1/cm.yaml": cm("twice", value="a"),
    "dup2/cm.yaml": cm("twice", value="b"),
    # a pause label holds its bundle, and what the bundle uses elsewhere
    "paused/deploy.yaml": deployment("paused", '{"gitgate.io/paused": "true"}'),
    # a kind defined by a CRD in another source: its scope decides the default namespace
    "crds/crd.yaml": crd_yaml("example.com", "Widget"),
    "widgets/w.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    # a split source: two apps, each a bundle, assigned as one unit
    "split/bundle.yaml": "split: app\n",
    "split/x.yaml": deployment("x"),
    "split/y.yaml": deployment("y", spec_extra="---\n" + cm("y-only")),
    # a bundle name claimed by two sources (`split/x` as stored is `split.x`)
    "named/bundle.yaml": "name: split.x\n",
    "named/cm.yaml": cm("named"),
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_files(tmp_path / "repo", REPO)


def plan_of(root: Path, shard=None, cache=None):
    return plan_checkout(root, None, NOW, revision="r1", shard=shard, cache=cache).plan


def units(plan) -> set[str]:
    return {unit_of(item.bundle.name) for item in plan.bundles}


def compared(plan) -> dict:
    """What a replica does with its bundles: every bundle's plan, and what the pass says."""
    return {"bundles": {item.bundle.name: item for item in plan.bundles},
            "gates": plan.gates, "invalid": plan.invalid_gates,
            "problems": set(plan.problems), "warnings": set(plan.warnings)}


def restricted(full: dict, mine: set[str]) -> dict:
    return {**full, "bundles": {name: item for name, item in full["bundles"].items()
                                if unit_of(name) in mine}}


def test_the_repo_has_every_rule_across_sources(repo):
    """The fixture is what it says: each cross-source rule fires in the whole plan."""
    plan = plan_of(repo)
    by_name = {item.bundle.name: item for item in plan.bundles}
    reasons = {name: {p.reason for p in item.bundle.problems} for name, item in by_name.items()}
    assert Reason.POLICY_TAKEOVER in reasons["hijack"]
    assert Reason.DUPLICATE_OBJECT in reasons["dup1"] and Reason.DUPLICATE_OBJECT in reasons["dup2"]
    assert any(Reason.DUPLICATE_BUNDLE in r for r in reasons.values())
    assert by_name["app-b"].bundle.overridden_by  # the override elsewhere folded in
    held = {name for name, item in by_name.items() if item.verdict.verdict.value == "held"}
    assert {"app-a", "paused"} <= held
    said = {name: " ".join(r.reason for r in item.verdict.reasons)
            for name, item in by_name.items()}
    assert "app-a" in said["config"] and "paused" in said["config"]  # what held ones use
    assert "held with app-a" in said["overrides-a"]  # an override acting on a held bundle
    widget = next(o for o in by_name["widgets"].bundle.objects if o["kind"] == "Widget")
    assert widget["metadata"]["namespace"] == "default"


def test_each_replica_plans_its_own_bundles_as_the_whole_repo_would(repo):
    full = compared(plan_of(repo))
    every = units(plan_of(repo))
    for unit in sorted(every):  # each source alone on one side, the rest on the other
        for mine in ({unit}, every - {unit}):
            cache = RenderCache()
            def shard(name: str, mine: set[str] = mine) -> bool:
                return unit_of(name) in mine
            first = plan_of(repo, shard, cache)
            assert compared(first) == restricted(full, mine), (unit, mine)
            again = plan_of(repo, shard, cache)  # the summaries now come from the cache
            assert compared(again) == restricted(full, mine), (unit, mine)
            assert first.elsewhere == {n for n in full["bundles"] if unit_of(n) not in mine}


def test_a_source_that_becomes_this_replicas_is_rendered_in_full_again(repo):
    full = compared(plan_of(repo))
    cache = RenderCache()
    every = units(plan_of(repo))
    plan_of(repo, lambda name: unit_of(name) == "ns", cache)  # all else summarized
    now_all = plan_of(repo, lambda name: True, cache)
    assert compared(now_all) == full
    secret = next(o for item in now_all.bundles if item.bundle.name == "app-a"
                  for o in item.bundle.objects if o["kind"] == "Secret")
    assert secret.get("stringData") or secret.get("data")  # the full object, not a summary
    assert units(now_all) == every


def test_a_source_that_becomes_another_replicas_is_summarized_from_the_cache(repo):
    """The sources this replica rendered in full are summarized when they move away, with no
    render (the cache hands back the full render), and plan as the whole repo does."""
    full = compared(plan_of(repo))
    cache = RenderCache()
    plan_of(repo, lambda name: True, cache)
    checkout = plan_checkout(repo, None, NOW, revision="r1", cache=cache,
                             shard=lambda name: unit_of(name) == "ns")
    assert cache.misses == 0
    assert compared(checkout.plan) == restricted(full, {"ns"})
    assert all(r.summary is not None for r in checkout.rendered.rendered
               if r.source.path != "ns" and not r.failed)
    again = plan_checkout(repo, None, NOW, revision="r1", cache=cache,
                          shard=lambda name: unit_of(name) == "ns")
    assert cache.misses == 0 and compared(again.plan) == restricted(full, {"ns"})


def test_a_summary_holds_no_content_and_is_smaller(repo):
    cache = RenderCache()
    checkout = plan_checkout(repo, None, NOW, revision="r1", cache=cache,
                             shard=lambda name: unit_of(name) == "ns")
    kept = {r.source.path: r for r in checkout.rendered.rendered}
    app_a = kept["app-a"]
    assert app_a.summary is not None
    assert "canary-value" not in repr(app_a) and "app-a:1" not in repr(app_a)
    assert kept["ns"].summary is None  # its own: in full


def test_a_summary_made_under_other_scopes_is_made_again(repo, tmp_path):
    """The CRD leaves: Widget's scope is no longer known from the repo, and the summary of
    `widgets` (placed when Widget was namespaced) must not stand."""
    cache = RenderCache()
    def shard(name: str) -> bool:
        return unit_of(name) == "ns"
    first = plan_checkout(repo, None, NOW, revision="r1", cache=cache, shard=shard)
    widgets = next(r for r in first.rendered.rendered if r.source.path == "widgets")
    assert widgets.summary is not None
    (repo / "crds/crd.yaml").unlink()
    (repo / "crds/cm.yaml").write_text(cm("crds-gone"))
    full = compared(plan_of(repo))
    second = plan_checkout(repo, None, NOW, revision="r1", cache=cache, shard=shard)
    assert compared(second.plan) == restricted(full, {"ns"})
    again = next(r for r in second.rendered.rendered if r.source.path == "widgets")
    assert again.summary is not None and again.summary.scopes != widgets.summary.scopes
    third = plan_checkout(repo, None, NOW, revision="r1", cache=cache, shard=shard)
    assert compared(third.plan) == restricted(full, {"ns"})  # the warning kept with it
    assert any(w.reason == Reason.UNKNOWN_KIND and w.source == "widgets"
               for w in third.plan.warnings)


@pytest.mark.parametrize("kind,api,path", [
    ("Deployment", "apps/v1", ("spec", "template")),
    ("CronJob", "batch/v1", ("spec", "jobTemplate", "spec", "template")),
    ("Pod", "v1", ("spec",)),
])
def test_a_summarized_workload_uses_what_the_workload_uses(kind, api, path):
    pod_spec = {"serviceAccount": "old-sa",
                "volumes": [{"name": "p", "projected": {"sources": [
                    {"configMap": {"name": "proj-cm"}}, {"secret": {"name": "proj-s"}}]}}],
                "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-s"}}]}],
                "containers": [{"name": "c", "image": "secret-image:1",
                                "env": [{"name": "A", "valueFrom": {
                                    "configMapKeyRef": {"name": "env-cm", "key": "a"}}}]}]}
    template = {"metadata": {"labels": {"app": "w"}}, "spec": pod_spec}
    body: dict = pod_spec if kind == "Pod" else template
    for key in reversed(path if kind != "Pod" else ()):
        body = {key: body}
    obj = {"apiVersion": api, "kind": kind,
           "metadata": {"name": "w", "namespace": "web", "labels": {"l": "1"},
                        "annotations": {"a": "b"}}, **({"spec": body} if kind == "Pod" else body)}
    stub = summarized(obj)
    assert deps.is_workload(stub)
    assert deps.used_refs(stub) == deps.used_refs(obj) != set()
    assert stub["metadata"] == {"name": "w", "namespace": "web", "labels": {"l": "1"}}
    assert "secret-image" not in repr(stub)


def test_karmada_objects_and_crds_are_kept_whole():
    policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
              "metadata": {"name": "o", "namespace": "web"}, "spec": {"overrideRules": []}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "a.b"}, "spec": {"scope": "Namespaced"}}
    assert summarized(policy) is policy and summarized(crd) is crd


def test_a_source_is_assigned_as_one():
    shards = ShardMap.of(["r1", "r2", "r3"])
    for index in range(300):
        base = f"src-{index}"
        assert shards.owner(base) == shards.owner(f"{base}/app") == shards.owner(f"{base}/b")
    assert len({shards.owner(f"src-{i}") for i in range(300)}) == 3


def test_holds_reach_across_replicas(repo):
    """The owner of `config` holds its ConfigMap for the held app-a and paused, which it
    knows only as summaries; the owner of `overrides-a` holds the override on app-a."""
    for unit, words in (("config", ("app-a", "paused")), ("overrides-a", ("held with app-a",))):
        plan = plan_of(repo, lambda name, unit=unit: unit_of(name) == unit)
        (item,) = plan.bundles
        assert item.bundle.name == unit
        assert item.verdict.held_objects, unit
        said = " ".join(r.reason for r in item.verdict.reasons)
        assert all(word in said for word in words), (unit, said)


# ---------------------------------------------------------------- renders kept on disk

def test_a_takeover_reads_the_full_renders_from_disk_and_plans_as_the_whole(repo, tmp_path):
    """`run --shard` keeps every full render on disk (`render.diskcache`): a replica that
    takes over reads them instead of rendering, except a source holding a Secret, which is
    never written and is rendered again."""
    full = compared(plan_of(repo))
    disk = RenderDisk(tmp_path / "renders")
    cache = RenderCache(disk)
    plan_of(repo, lambda name: unit_of(name) == "ns", cache)  # all else summarized
    read_before = disk.reads  # a summary gone stale (the Widget's scope) was read back
    kept = {p.name for p in (tmp_path / "renders").iterdir()}
    assert kept and all(p.endswith(".json") for p in kept)
    text = "".join((tmp_path / "renders" / name).read_text() for name in kept)
    assert "canary-value" not in text and '"Secret"' not in text
    took_over = plan_of(repo, lambda name: True, cache)
    assert compared(took_over) == full
    # every kept render read back but ns's (held in full in memory); app-a has no file
    # (its Secret) and is rendered again
    assert len(kept) == len(units(plan_of(repo))) - 1  # a file per source, but app-a
    assert disk.reads - read_before == len(kept) - 1
    assert (tmp_path / "renders").stat().st_mode & 0o077 == 0


def test_a_kept_render_is_used_only_under_its_own_key(repo, tmp_path):
    """A file that is damaged, or whose content names another key, is rendered over; the
    renders of sources that changed are removed."""
    folder = tmp_path / "renders"
    plan_of(repo, lambda name: unit_of(name) == "ns", RenderCache(RenderDisk(folder)))
    files = sorted(folder.iterdir())
    files[0].write_text("{not json")
    files[1].write_text(files[2].read_text())  # another source's render under this name
    disk = RenderDisk(folder)
    assert compared(plan_of(repo, lambda name: True, RenderCache(disk))) == compared(
        plan_of(repo))
    assert disk.reads == len(files) - 2
    (repo / "config/cm.yaml").write_text(cm("shared-cfg", value="2"))
    plan_of(repo, lambda name: True, RenderCache(disk))
    assert len(list(folder.iterdir())) == len(files)  # the old render of config replaced
    assert files[0].exists() and "not json" not in files[0].read_text()


def test_only_this_replicas_bundles_get_writes_worked_out_and_all_are_judged(repo):
    """Another replica's bundles keep their verdicts and warnings (the rules across bundles
    read them) but get no objects to write nor generated policies: a replica holds those for
    its own share alone."""
    from gitgate.passes.onepass import plan_rendered
    from gitgate.render.pipeline import render_repo

    rendered = render_repo(repo, None)
    whole = plan_rendered(rendered, NOW, "r1")
    names = [item.bundle.name for item in whole.bundles]
    assert {"app-a", "config"} <= set(names)

    def mine(name: str) -> bool:
        return name in {"app-a", "config"}

    part = plan_rendered(rendered, NOW, "r1", mine=mine)
    assert [(i.bundle.name, i.verdict) for i in part.bundles] == [
        (i.bundle.name, i.verdict) for i in whole.bundles]
    assert part.warnings == whole.warnings and part.gates == whole.gates
    for own, full in zip(part.bundles, whole.bundles, strict=True):
        if mine(own.bundle.name):
            assert (own.desired, own.policies) == (full.desired, full.policies)
        else:
            assert (own.desired, own.policies) == ((), ())
    assert any(full.policies for full in whole.bundles if not mine(full.bundle.name))
