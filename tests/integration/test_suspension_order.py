"""The order of writes around a suspension, read from the request log (over real HTTP against
the emulator, or a real cluster with GITGATE_TEST_KUBECONFIG): a suspended bundle's policies go
before its templates, its templates wait for Karmada's bindings, and a lifted or narrowed
suspension is lifted only after the templates."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from gitgate.karmada.policy import policy_name
from tests.support.applyrepo import NOW, Repo, result_of
from tests.support.manifests import cm, deployment
from tests.support.records import record

pytestmark = pytest.mark.integration
POLICIES = "/propagationpolicies/"


@pytest.fixture
def repo(tmp_path, kube) -> Repo:
    return Repo(tmp_path / "repo", kube)


def gate(repo: Repo, clusters: str | None) -> dict[str, str]:
    where = f", clusters: [{clusters}]" if clusters else ""
    return {"gates/move.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: move-db}}
        spec: {{bundles: ["{repo.run}-db"], action: suspend, reason: blue/green{where}}}
    """}


def db_app(repo: Repo, version: int, extra: bool = False) -> dict[str, str]:
    text = cm("db-config", repo.db_ns, f"v{version}") + deployment("db", repo.db_ns,
                                                                   f"db:{version}")
    return {"db/app.yaml": text + (cm("db-extra", repo.db_ns) if extra else "")}


def db_writes(kube, repo: Repo) -> list[str]:
    """Paths of the writes to the db bundle's namespace, in the order they were sent."""
    return [path for _, path in kube.bundle_writes() if f"/namespaces/{repo.db_ns}/" in path]


def db_binding_suspension(kube, repo: Repo, kind: str, name: str):
    binding = repo.live("work.karmada.io/v1alpha2", "ResourceBinding", repo.db_ns,
                        f"{name}-{kind}".lower())
    return ((binding or {}).get("spec") or {}).get("suspension")


def test_a_suspended_bundle_writes_its_policy_before_any_template(repo, tools, kube):
    repo.apply(tools)
    repo.write({**gate(repo, "member2"), **db_app(repo, 2, extra=True)})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    db = result_of(result, "-db")
    assert db.verdict == "suspended" and not db.failed, db.message
    writes = db_writes(kube, repo)
    # the suspension before anything renders (apply.freezefirst), the policy as the plan has
    # it (a placement may have changed in the same commit), then the templates
    assert POLICIES in writes[0] and POLICIES in writes[1], writes
    assert [p.rsplit("/", 1)[1] for p in writes[2:]] == ["db-config", "db-extra", "db"]
    suspended = {"dispatchingOnClusters": {"clusterNames": ["member2"]}}
    if kube.emulator is not None:  # Karmada's bindings (a plain kube-apiserver has none)
        assert db_binding_suspension(kube, repo, "Deployment", "db") == suspended
        assert db_binding_suspension(kube, repo, "ConfigMap", "db-extra") == suspended


def test_no_template_is_written_when_karmada_does_not_show_the_suspension(repo, tools, kube):
    if kube.emulator is None:
        pytest.skip("needs the emulator's binding lag")
    repo.apply(tools)
    kube.emulator.state.binding_lag = float("inf")
    repo.write({**gate(repo, "member2"), **db_app(repo, 2)})
    result = repo.apply(tools, NOW + timedelta(minutes=1), suspension_timeout=timedelta(
        seconds=0.5))
    db = result_of(result, "-db")
    assert db.failed and db.reason == "SuspensionNotObserved" and not result.ok
    assert f"ResourceBinding {repo.db_ns}/db-deployment" in db.message
    assert f"ResourceBinding {repo.db_ns}/db-config-configmap" in db.message
    writes = db_writes(kube, repo)
    assert writes and all(POLICIES in w for w in writes), writes  # the suspension, nothing else
    live = repo.live("apps/v1", "Deployment", repo.db_ns, "db")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "web:1"
    assert result_of(result, "-web").verdict == "apply"  # other bundles go on
    inventory = record(kube.cluster, f"{repo.run}-db", repo.run)
    assert inventory.verdict == "failed"
    assert "SuspensionNotObserved" in inventory.message

    kube.emulator.state.binding_lag = 0.0  # Karmada catches up: the next pass goes through
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert not result_of(result, "-db").failed
    live = repo.live("apps/v1", "Deployment", repo.db_ns, "db")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "db:2"


def test_a_lifted_suspension_is_lifted_after_the_templates(repo, tools, kube):
    repo.apply(tools)
    repo.write({**gate(repo, "member2"), **db_app(repo, 2)})
    assert not repo.apply(tools, NOW + timedelta(minutes=1)).bundles[0].failed
    repo.remove("gates/move.yaml")
    repo.write(db_app(repo, 3))
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result_of(result, "-db").verdict == "apply" and result.ok
    writes = db_writes(kube, repo)
    assert [p.rsplit("/", 1)[1] for p in writes[:-1]] == ["db-config", "db"]
    assert POLICIES in writes[-1]
    policy = repo.live("policy.karmada.io/v1alpha1", "PropagationPolicy", repo.db_ns,
                       policy_name(f"{repo.run}-db", repo.run))
    assert "suspension" not in policy["spec"]


def test_a_narrowed_suspension_keeps_every_cluster_suspended_until_the_templates_are_written(
        repo, tools, kube):
    repo.apply(tools)
    repo.write({**gate(repo, None), **db_app(repo, 2)})  # all clusters
    assert result_of(repo.apply(tools, NOW + timedelta(minutes=1)), "-db").verdict == "suspended"
    repo.write({**gate(repo, "member2"), **db_app(repo, 3)})  # member1 released
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert not result_of(result, "-db").failed
    writes = db_writes(kube, repo)
    assert [p.rsplit("/", 1)[1] for p in writes[:-1]] == ["db-config", "db"]
    assert POLICIES in writes[-1]
    policy = repo.live("policy.karmada.io/v1alpha1", "PropagationPolicy", repo.db_ns,
                       policy_name(f"{repo.run}-db", repo.run))
    assert policy["spec"]["suspension"] == {"dispatchingOnClusters": {"clusterNames": ["member2"]}}


def test_a_held_bundle_keeps_its_policies_untouched(repo, tools, kube):
    repo.apply(tools)
    policy_args = ("policy.karmada.io/v1alpha1", "PropagationPolicy", repo.db_ns,
                   policy_name(f"{repo.run}-db", repo.run))
    before = repo.live(*policy_args)["metadata"]["resourceVersion"]
    repo.write({"gates/freeze.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: freeze}}
        spec: {{bundles: ["{repo.run}-db"], reason: INC-9}}
    """, **db_app(repo, 2, extra=True)})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result_of(result, "-db").verdict == "held"
    assert db_writes(kube, repo) == []
    assert repo.live(*policy_args)["metadata"]["resourceVersion"] == before


def test_a_suspended_bundle_with_nothing_to_write_costs_no_request(repo, tools, kube):
    repo.apply(tools)
    repo.write({**gate(repo, "member2"), **db_app(repo, 2)})
    assert not result_of(repo.apply(tools, NOW + timedelta(minutes=1)), "-db").failed
    repo.apply(tools, NOW + timedelta(minutes=2))  # records the new status once
    repo.apply(tools, NOW + timedelta(minutes=3))
    assert sorted((m, p) for m, p, *_ in kube.cluster.sent) == sorted([  # nothing else:
        ("GET", "/api/v1/namespaces/gitgate-system/configmaps"),  # an earlier release's?
        ("GET", "/apis/gitgate.io/v1alpha1/namespaces/gitgate-system/bundles"),  # records
        # the gate names member2: that it is one of Karmada's members (else it suspends
        # everywhere), read once per pass
        ("GET", "/apis/cluster.karmada.io/v1alpha1/clusters")])


def test_a_new_bundle_writes_its_own_policies_before_its_templates(repo, tools, kube):
    """Karmada's detector then claims each template as it arrives: no waiting list of every
    bundle's templates for each new policy to read. An override acting on another bundle
    still goes last; once recorded, a bundle's policies go after its templates again."""
    repo.write({"tuning/bundle.yaml": f"name: {repo.run}-tuning\n", "tuning/op.yaml": f"""
        apiVersion: policy.karmada.io/v1alpha1
        kind: OverridePolicy
        metadata: {{name: db-replicas, namespace: {repo.db_ns}}}
        spec:
          resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: db}}]
          overrideRules:
            - targetCluster: {{clusterNames: [member2]}}
              overriders: {{plaintext: [{{path: /spec/replicas, operator: replace, value: 1}}]}}
        """})
    result = repo.apply(tools)
    assert result.ok, [b.message for b in result.bundles if b.failed]
    writes = db_writes(kube, repo)
    assert POLICIES in writes[0], writes  # db's own policy first
    assert [p.rsplit("/", 1)[1] for p in writes[1:3]] == ["db-config", "db"], writes
    assert "/overridepolicies/db-replicas" in writes[3] and len(writes) == 4, writes
    repo.write({**db_app(repo, 2), "db/bundle.yaml": (
        f"name: {repo.run}-db\nplacement: {{clusterAffinity: {{clusterNames: [member1]}}}}\n")})
    assert repo.apply(tools, NOW + timedelta(minutes=1)).ok
    writes = db_writes(kube, repo)
    assert [p.rsplit("/", 1)[1] for p in writes[:-1]] == ["db-config", "db"], writes
    assert POLICIES in writes[-1]


def test_an_object_moved_into_a_suspended_bundle_is_confirmed_in_the_same_pass(
        repo, tools, kube):
    """Karmada leaves a template with the policy that claimed it while that policy still
    selects it: the bundle it moved from lets go of it before the suspension is awaited."""
    repo.write(db_app(repo, 1, extra=True))
    assert repo.apply(tools).ok
    binding = ("work.karmada.io/v1alpha2", "ResourceBinding", repo.db_ns, "db-extra-configmap")
    deadline = time.monotonic() + 60
    while repo.live(*binding) is None:  # Karmada's detector has made it (a real one: soon)
        assert time.monotonic() < deadline, "Karmada made no binding for db-extra"
        time.sleep(0.2)
    repo.write({**db_app(repo, 1), "cache/bundle.yaml": f"name: {repo.run}-cache\n",
                "cache/app.yaml": cm("db-extra", repo.db_ns, "v2"),
                "gates/move.yaml": gate(repo, "member2")["gates/move.yaml"].replace(
                    f"{repo.run}-db", f"{repo.run}-cache")})
    result = repo.apply(tools, NOW + timedelta(minutes=1),
                        suspension_timeout=timedelta(seconds=10))
    cache = result_of(result, "-cache")
    assert cache.verdict == "suspended" and not cache.failed, cache.message
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    assert repo.live("v1", "ConfigMap", repo.db_ns, "db-extra")["data"] == {"value": "v2"}
    suspended = {"dispatchingOnClusters": {"clusterNames": ["member2"]}}
    assert db_binding_suspension(kube, repo, "ConfigMap", "db-extra") == suspended
