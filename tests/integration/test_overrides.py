"""Override policies committed in another folder act with the bundle they select (over real
HTTP against the emulator, or a real Karmada with GITGATE_TEST_KUBECONFIG): held with it,
written only after its suspension is confirmed, kept while it is held when removed from Git;
a repo propagation policy cannot take over another bundle's templates."""

from __future__ import annotations

import textwrap
import time
from datetime import timedelta

import pytest

from gitgate.apply.ledger import read_inventories
from gitgate.karmada.policy import policy_name
from gitgate.passes.karmadareads import observe
from tests.support.applyrepo import NOW, Repo, result_of
from tests.support.manifests import cm, db_image_override, deployment

pytestmark = pytest.mark.integration
OVERRIDES = "/overridepolicies/"
API = "policy.karmada.io/v1alpha1"


@pytest.fixture
def repo(tmp_path, kube) -> Repo:
    repo = Repo(tmp_path / "repo", kube)
    repo.write({"platform/bundle.yaml": f"name: {repo.run}-platform\n",
                **override(repo, "db:2"),
                "platform/shared.yaml": textwrap.dedent(f"""\
                    apiVersion: v1
                    kind: ConfigMap
                    metadata: {{name: platform-shared, namespace: {repo.db_ns}}}
                    data: {{value: v1}}
                    """)})
    return repo


def override(repo: Repo, image: str) -> dict[str, str]:
    return {"platform/override.yaml": db_image_override(repo.db_ns, image)}


def gate(repo: Repo, action: str, clusters: str = "") -> dict[str, str]:
    where = f", clusters: [{clusters}]" if clusters else ""
    return {"gates/db.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: db-freeze}}
        spec: {{bundles: ["{repo.run}-db"], action: {action}, reason: edits in progress{where}}}
    """}


def live_image(repo: Repo) -> str | None:
    policy = repo.live(API, "OverridePolicy", repo.db_ns, "db-image")
    if policy is None:
        return None
    return policy["spec"]["overrideRules"][0]["overriders"]["plaintext"][0]["value"]


def override_writes(kube) -> list[str]:
    return [path for _, path in kube.bundle_writes() if OVERRIDES in path]


def test_an_override_is_written_to_the_karmada_api_and_never_propagated(repo, tools, kube):
    result = repo.apply(tools)
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    assert live_image(repo) == "db:2"
    policy = repo.live(API, "PropagationPolicy", repo.db_ns,
                       policy_name(f"{repo.run}-platform", repo.run))
    kinds = {s["kind"] for s in policy["spec"]["resourceSelectors"]}
    assert kinds == {"ConfigMap"}  # the platform's ConfigMap, never its OverridePolicy


def test_a_hold_on_the_selected_bundle_holds_the_override_committed_elsewhere(
        repo, tools, kube):
    repo.apply(tools)
    repo.write({**gate(repo, "hold"), **override(repo, "db:3"),
                "platform/shared.yaml": (repo.root / "platform/shared.yaml").read_text()
                .replace("value: v1", "value: v2")})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    platform = result_of(result, "-platform")
    assert not platform.failed and platform.verdict == "apply", platform.message
    assert override_writes(kube) == [] and live_image(repo) == "db:2"
    shared = repo.live("v1", "ConfigMap", repo.db_ns, "platform-shared")
    assert shared["data"]["value"] == "v2"  # the rest of the platform bundle went on

    (repo.root / "gates/db.yaml").unlink()
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result.ok and live_image(repo) == "db:3"


def test_an_override_removed_from_git_stays_while_its_bundle_is_held(repo, tools, kube):
    repo.apply(tools)
    repo.write(gate(repo, "hold"))
    repo.remove("platform/override.yaml")
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    platform = result_of(result, "-platform")
    assert live_image(repo) == "db:2" and not platform.pruned
    assert "held bundle" in platform.message and "db-image" in platform.message

    (repo.root / "gates/db.yaml").unlink()
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result.ok and live_image(repo) is None


def test_a_suspension_and_an_override_edit_in_one_commit_write_the_suspension_first(
        repo, tools, kube):
    repo.apply(tools)
    repo.write({**gate(repo, "suspend", "member2"), **override(repo, "db:3")})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    writes = [path for _, path in kube.bundle_writes()]
    db_policy = f"/propagationpolicies/{policy_name(f'{repo.run}-db', repo.run)}"
    last_suspension = max(i for i, p in enumerate(writes) if p.endswith(db_policy))
    [override_write] = [i for i, p in enumerate(writes) if OVERRIDES in p][-1:]
    assert last_suspension < override_write
    assert live_image(repo) == "db:3"


def test_no_override_is_written_while_karmada_does_not_show_the_suspension(repo, tools, kube):
    if kube.emulator is None:
        pytest.skip("needs the emulator's binding lag")
    repo.apply(tools)
    kube.emulator.state.binding_lag = float("inf")
    repo.write({**gate(repo, "suspend", "member2"), **override(repo, "db:3")})
    result = repo.apply(tools, NOW + timedelta(minutes=1),
                        suspension_timeout=timedelta(seconds=0.5))
    platform = result_of(result, "-platform")
    assert platform.failed and platform.reason == "SuspensionNotObserved"
    assert "db-image" in platform.message and f"{repo.run}-db" in platform.message
    assert live_image(repo) == "db:2"

    kube.emulator.state.binding_lag = 0.0
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    assert live_image(repo) == "db:3"  # the next pass sends what was left out


def test_a_repo_propagation_policy_cannot_take_over_another_bundle(repo, tools, kube):
    repo.apply(tools)
    repo.write({**gate(repo, "suspend"), "platform/grab.yaml": textwrap.dedent(f"""\
        apiVersion: {API}
        kind: PropagationPolicy
        metadata: {{name: grab, namespace: {repo.db_ns}}}
        spec:
          priority: 1000
          preemption: Always
          resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment}}]
          placement: {{clusterAffinity: {{clusterNames: [member1, member2]}}}}
        """)})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    platform = result_of(result, "-platform")
    assert platform.failed and platform.reason == "PolicyTakeover"  # the reason of its problem
    assert "take over" in platform.message and f"{repo.run}-db" in platform.message
    assert repo.live(API, "PropagationPolicy", repo.db_ns, "grab") is None
    db = repo.live(API, "PropagationPolicy", repo.db_ns, policy_name(f"{repo.run}-db", repo.run))
    assert db["spec"]["suspension"] == {"dispatching": True}
    assert db["spec"]["priority"] == 2**31 - 1


def cluster_versions(repo: Repo) -> dict[str, str]:
    inventories = read_inventories(repo.kube.cluster, repo.run)
    found = observe(repo.kube.cluster, [inventories[f"{repo.run}-db"]])
    assert not found.error, found.error
    return {c.name: str(c.version) for c in found.bundles[f"{repo.run}-db"].clusters}


def eventually(what, timeout: float = 60.0):
    """Poll a real control plane (the emulator answers at once)."""
    deadline = time.monotonic() + timeout
    while not (value := what()):
        assert time.monotonic() < deadline, f"not within {timeout:g}s"
        time.sleep(0.5)
    return value


def test_a_suspended_member_is_behind_until_the_override_change_reaches_it(repo, tools, kube):
    if kube.cluster.scope_of("work.karmada.io/v1alpha1", "Work") is None:
        pytest.skip("a plain kube-apiserver: Karmada's bindings and Works are not there")
    repo.apply(tools)
    eventually(lambda: cluster_versions(repo).get("member2") == "current")
    repo.write({**gate(repo, "suspend", "member2"), **override(repo, "db:3")})
    assert repo.apply(tools, NOW + timedelta(minutes=1)).ok
    versions = eventually(lambda: (v := cluster_versions(repo)).get("member2") == "behind"
                          and v)
    assert versions["member1"] == "current"  # not targeted: nothing to wait for there
    (repo.root / "gates/db.yaml").unlink()
    assert repo.apply(tools, NOW + timedelta(minutes=2)).ok
    eventually(lambda: cluster_versions(repo).get("member2") == "current")


def test_an_override_that_could_act_on_a_bundle_that_failed_to_render_waits(repo, tools,
                                                                             kube):
    """The failed bundle's objects are unknown this pass; its inventory says what it last
    applied, and an override that could act on any of it (labels unknown: a label selector
    counts) is not written until the bundle renders again."""
    repo.apply(tools)
    repo.write({**override(repo, "db:3"),
                "db/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [broken\n"})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    platform = result_of(result, "-platform")
    assert not platform.failed, platform.message
    assert "held with" in platform.message and "failed to render" in platform.message
    assert live_image(repo) == "db:2"
    repo.write({"db/app.yaml": cm("db-config", repo.db_ns) + deployment("db", repo.db_ns)})
    result = repo.apply(tools, NOW + timedelta(minutes=2))
    assert result.ok and live_image(repo) == "db:3"
