"""Override policies committed in another folder act with the bundle they select, on a real
Karmada: what each member runs while the bundle is held or suspended, and once it opens; a
repo propagation policy cannot take over another bundle's templates."""

from __future__ import annotations

import textwrap

import pytest

from tests.e2e.karmada import Karmada, Run, gate, gitgate, stays, wait_for
from tests.support.karmadarun import app_files, on_both, with_namespaces

pytestmark = pytest.mark.e2e
WATCH = 30.0  # how long a held member must keep what it runs
ROUND_WATCH = 15.0  # per round of the repeated suspend + override edit
API = "policy.karmada.io/v1alpha1"


def platform(run: Run, image: str, clusters: str = "member2") -> dict:
    """The platform team's folder: an OverridePolicy setting web's image on `clusters`."""
    return {"platform/bundle.yaml": f"name: {run.bundle('platform')}\n"
                                    f"dependsOn: [{run.bundle('ns')}]\n",
            "platform/override.yaml": textwrap.dedent(f"""\
                apiVersion: {API}
                kind: OverridePolicy
                metadata: {{name: web-image, namespace: {run.ns('web')}}}
                spec:
                  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]
                  overrideRules:
                    - targetCluster: {{clusterNames: [{clusters}]}}
                      overriders:
                        plaintext:
                          - {{path: /spec/template/spec/containers/0/image,
                              operator: replace, value: "{image}"}}
                """)}


def start(run: Run, karmada: Karmada) -> str:
    ns = run.ns("web")
    run.repo.commit({**with_namespaces(run, "web"), **app_files(run, "web", "nginx:1.0", "a"),
                     **platform(run, "nginx:2.0")}, "web, and its member2 override")
    run.apply()
    wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:1.0", message="member1")
    wait_for(lambda: karmada.image("member2", ns, "web") == "nginx:2.0",
             message="member2 runs the override")
    return ns


def live_override(karmada: Karmada, ns: str) -> str | None:
    policy = karmada.api.get(API, "OverridePolicy", ns, "web-image")
    rules = (policy or {}).get("spec", {}).get("overrideRules") or [{}]
    return rules[0].get("overriders", {}).get("plaintext", [{}])[0].get("value")


def test_an_override_is_never_propagated_and_is_held_with_the_bundle_it_selects(run, karmada):
    ns = start(run, karmada)
    # the platform bundle holds only an OverridePolicy: nothing of it is sent to members
    assert karmada.api.get(API, "PropagationPolicy", ns,
                           run.policy("platform")) is None

    run.repo.commit({"gates/h.yaml": gate("h", run.bundle("web"), action="hold"),
                     **platform(run, "nginx:2.1")}, "hold web; edit its override")
    document = run.apply()
    assert run.result(document, "web")["verdict"] == "held"
    assert live_override(karmada, ns) == "nginx:2.0"
    misses = stays(lambda: karmada.image("member2", ns, "web") == "nginx:2.0"
                   and karmada.image("member1", ns, "web") == "nginx:1.0", WATCH)
    assert misses == []

    run.repo.commit({"gates/h.yaml": None, **app_files(run, "web", "nginx:1.1", "a")},
                    "release: app and override together")
    run.apply()
    wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:1.1", message="member1")
    wait_for(lambda: karmada.image("member2", ns, "web") == "nginx:2.1",
             message="member2 gets the override edited while held")


def test_suspend_member2_with_an_override_edit_five_times_never_leaks(run, karmada):
    ns = start(run, karmada)
    leaks: list[str] = []
    for round_ in range(1, 6):
        old, new = f"nginx:2.{round_ - 1}", f"nginx:2.{round_}"
        run.repo.commit({"gates/x.yaml": gate("x", run.bundle("web"), clusters="member2"),
                         **platform(run, new)}, f"suspend member2, override {new}")
        document = run.apply()
        assert run.result(document, "web")["verdict"] == "suspended"
        assert live_override(karmada, ns) == new  # written, after the suspension held
        wait_for(lambda: run.clusters("web")["member2"]["version"] == "behind",
                 message="status says member2 has not got the override change")
        leaks += [f"round {round_}: member2 at {karmada.image('member2', ns, 'web')} ({t})"
                  for t in stays(lambda o=old: karmada.image("member2", ns, "web") == o,
                                 ROUND_WATCH)]
        run.repo.commit({"gates/x.yaml": None}, "resume member2")
        run.apply()
        wait_for(lambda n=new: karmada.image("member2", ns, "web") == n,
                 message=f"member2 converges to {new} on resume")
        wait_for(lambda: run.clusters("web")["member2"]["version"] == "current",
                 message="once dispatched, member2 is current again")
    assert leaks == []
    assert karmada.image("member1", ns, "web") == "nginx:1.0"


def test_a_repo_propagation_policy_cannot_take_over_a_suspended_bundle(run, karmada):
    ns = run.ns("web")
    run.repo.commit({**with_namespaces(run, "web"), **app_files(run, "web", "nginx:1.0", "a"),
                     "gates/s.yaml": gate("s", run.bundle("web"))}, "web, suspended")
    run.apply()
    wait_for(lambda: karmada.api.get("apps/v1", "Deployment", ns, "web") is not None,
             message="the template on Karmada")
    run.repo.commit({"web/app.yaml": app_files(run, "web", "nginx:1.1", "a")["web/app.yaml"],
                     "platform/bundle.yaml": f"name: {run.bundle('platform')}\n",
                     "platform/grab.yaml": textwrap.dedent(f"""\
                         apiVersion: {API}
                         kind: PropagationPolicy
                         metadata: {{name: grab, namespace: {ns}}}
                         spec:
                           priority: 1000
                           preemption: Always
                           resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment}}]
                           placement: {{clusterAffinity: {{clusterNames: [member1, member2]}}}}
                         """)}, "another folder's policy selects web")
    done = gitgate("apply", str(run.repo.root), "--kubeconfig", str(karmada.kubeconfig),
                   "--instance", run.run_id, "-o", "json")
    assert done.returncode == 1, done.stderr
    assert "take over" in done.stdout and run.bundle("web") in done.stdout
    assert karmada.api.get(API, "PropagationPolicy", ns, "grab") is None
    template = karmada.api.get("apps/v1", "Deployment", ns, "web")
    claimed = template["metadata"].get("annotations", {}).get("propagationpolicy.karmada.io/name")
    assert claimed == run.policy("web")
    assert karmada.binding_suspension(ns, "Deployment", "web") == {"dispatching": True}
    on_both(karmada, lambda m: karmada.image(m, ns, "web"), None)  # nothing dispatched


def test_an_override_change_is_rolled_out_wave_by_wave(run, karmada, tmp_path):
    ns = run.ns("web")
    image = lambda member: karmada.image(member, ns, "web")  # noqa: E731
    app = app_files(run, "web", "nginx:1.0", "a")
    app["web/bundle.yaml"] += ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}],"
                               " bake: 5s, progressDeadline: 120s}\n")
    run.repo.commit({**with_namespaces(run, "web"), **app,
                     **platform(run, "nginx:2.0", clusters="member1, member2")},
                    "web, its override on both members, in waves")
    loop = run.start_loop(tmp_path / "cache")
    try:
        wait_for(lambda: image("member1") == "nginx:2.0", message="wave 1 gets the override")
        karmada.make_healthy("member1", ns, "web")
        wait_for(lambda: image("member2") == "nginx:2.0", timeout=60, message="then wave 2")
        karmada.make_healthy("member2", ns, "web")

        run.repo.commit(platform(run, "nginx:2.1", clusters="member1, member2"),
                        "edit the override only")
        wait_for(lambda: image("member1") == "nginx:2.1", timeout=60,
                 message="wave 1 gets the override change first")
        assert stays(lambda: image("member2") == "nginx:2.0", 15) == [], \
            "member2 got the override change before member1 was healthy"
        karmada.make_healthy("member1", ns, "web")
        wait_for(lambda: image("member2") == "nginx:2.1", timeout=60,
                 message="member2 gets it once member1 is healthy and baked")
    finally:
        log = run.stop_loop(loop)
    assert "Traceback" not in log


def test_a_new_bundle_reaches_its_members_with_its_own_override_already_applied(run, karmada):
    """A bundle's first write sends its own policies before its templates (`apply.writes`):
    member2's Deployment is created with the override's image, never created plain and then
    corrected (its generation stays 1)."""
    ns = run.ns("web")
    own = platform(run, "nginx:2.0")["platform/override.yaml"]
    run.repo.commit({**with_namespaces(run, "web"), **app_files(run, "web", "nginx:1.0", "a"),
                     "web/override.yaml": own}, "web with its own member2 override")
    run.apply()
    wait_for(lambda: karmada.image("member1", ns, "web") == "nginx:1.0", message="member1")
    wait_for(lambda: karmada.image("member2", ns, "web") == "nginx:2.0",
             message="member2 runs the override")
    assert karmada.api.get(API, "PropagationPolicy", ns, run.policy("web"))
    live = karmada.members["member2"].get("apps/v1", "Deployment", ns, "web")
    assert live["metadata"]["generation"] == 1, "member2's Deployment was changed after creation"
