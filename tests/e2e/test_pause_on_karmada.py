"""The pause promise on a real Karmada: what each member cluster ends up with when gitgate
suspends, holds, resumes and prunes. Run by `make e2e` with GITGATE_E2E_KARMADA set."""

from __future__ import annotations

import pytest

from tests.e2e.karmada import Karmada, Run, gate, stays, wait_for
from tests.support.karmadarun import app_files, on_both, with_namespaces

pytestmark = pytest.mark.e2e
WATCH = 30.0  # how long a suspended or held member must keep its old content
M2 = {"dispatchingOnClusters": {"clusterNames": ["member2"]}}


def policy_suspension(karmada: Karmada, run: Run, name: str):
    policy = karmada.api.get("policy.karmada.io/v1alpha1", "PropagationPolicy", run.ns(name),
                             run.policy(name))
    return (policy or {}).get("spec", {}).get("suspension")


def test_per_cluster_suspend_with_an_image_change_never_reaches_member2(run, karmada):
    ns = run.ns("web")
    run.repo.commit({**with_namespaces(run, "web"), **app_files(run, "web", "nginx:1.0", "a")},
                    "web at 1.0")
    run.apply()
    on_both(karmada, lambda m: karmada.image(m, ns, "web"), "nginx:1.0")
    leaks: list[str] = []
    for round_ in range(1, 6):
        old, new = f"nginx:1.{round_ - 1}", f"nginx:1.{round_}"
        run.repo.commit({"gates/x.yaml": gate("x", run.bundle("web"), clusters="member2"),
                         **app_files(run, "web", new, "a")}, f"suspend member2, roll {new}")
        document = run.apply()
        assert run.result(document, "web")["verdict"] == "suspended"
        wait_for(lambda n=new: karmada.image("member1", ns, "web") == n,
                 message=f"member1 gets {new}")
        assert karmada.image("karmada", ns, "web") == new
        leaks += [f"round {round_}: member2 at {karmada.image('member2', ns, 'web')} ({t})"
                  for t in stays(lambda o=old: karmada.image("member2", ns, "web") == o, WATCH)]
        run.repo.commit({"gates/x.yaml": None}, "resume member2")
        run.apply()
        wait_for(lambda n=new: karmada.image("member2", ns, "web") == n,
                 message=f"member2 converges to {new} on resume")
        assert policy_suspension(karmada, run, "web") is None
        wait_for(lambda: karmada.binding_suspension(ns, "Deployment", "web") is None,
                 message="the suspension leaves the Deployment's binding")
    assert leaks == []


def test_per_cluster_suspend_with_a_configmap_change_and_a_new_object(run, karmada):
    ns = run.ns("cfg")
    run.repo.commit({**with_namespaces(run, "cfg"), **app_files(run, "cfg", "nginx:1.0", "a")},
                    "cfg")
    run.apply()
    on_both(karmada, lambda m: karmada.configmap(m, ns, "cfg-config"), {"value": "a"})
    run.repo.commit({"gates/x.yaml": gate("x", run.bundle("cfg"), clusters="member2"),
                     **app_files(run, "cfg", "nginx:1.0", "b", extra="new")},
                    "suspend member2; config b and a new ConfigMap")
    assert run.result(run.apply(), "cfg")["verdict"] == "suspended"
    wait_for(lambda: karmada.configmap("member1", ns, "cfg-config") == {"value": "b"})
    wait_for(lambda: karmada.configmap("member1", ns, "cfg-extra") == {"value": "new"})
    misses = stays(lambda: karmada.configmap("member2", ns, "cfg-config") == {"value": "a"}
                   and karmada.configmap("member2", ns, "cfg-extra") is None, WATCH)
    assert misses == []
    assert karmada.binding_suspension(ns, "ConfigMap", "cfg-extra") == M2
    run.repo.commit({"gates/x.yaml": None}, "resume")
    run.apply()
    wait_for(lambda: karmada.configmap("member2", ns, "cfg-config") == {"value": "b"})
    wait_for(lambda: karmada.configmap("member2", ns, "cfg-extra") == {"value": "new"})


def test_full_suspend_through_the_loop_then_resume(run, karmada, tmp_path):
    """`gitgate run` following the repo: a full suspension stops every member; the Karmada
    template has the new content; removing the gate lets both converge."""
    ns = run.ns("all")
    run.repo.commit({**with_namespaces(run, "all"), **app_files(run, "all", "nginx:1.0", "a")},
                    "all at 1.0")
    loop = run.start_loop(tmp_path / "cache")
    try:
        on_both(karmada, lambda m: karmada.image(m, ns, "all"), "nginx:1.0")
        run.repo.commit({"gates/all.yaml": gate("all", run.bundle("all")),
                         **app_files(run, "all", "nginx:2.0", "a")}, "suspend all, roll 2.0")
        wait_for(lambda: karmada.image("karmada", ns, "all") == "nginx:2.0",
                 message="the loop writes the template")
        assert policy_suspension(karmada, run, "all") == {"dispatching": True}
        misses = stays(lambda: karmada.image("member1", ns, "all") == "nginx:1.0"
                       and karmada.image("member2", ns, "all") == "nginx:1.0", WATCH)
        assert misses == []
        run.repo.commit({"gates/all.yaml": None}, "resume")
        on_both(karmada, lambda m: karmada.image(m, ns, "all"), "nginx:2.0")
        wait_for(lambda: policy_suspension(karmada, run, "all") is None
                 and karmada.binding_suspension(ns, "Deployment", "all") is None
                 and karmada.binding_suspension(ns, "ConfigMap", "all-config") is None,
                 message="the suspension leaves the policy and every binding")
    finally:
        logs = run.stop_loop(loop)
    assert loop.returncode == 0, logs[-3000:]


def test_hold_writes_nothing_to_karmada_and_no_member_changes(run, karmada):
    ns = run.ns("held")
    run.repo.commit({**with_namespaces(run, "held"), **app_files(run, "held", "nginx:1.0", "a")},
                    "held at 1.0")
    run.apply()
    on_both(karmada, lambda m: karmada.image(m, ns, "held"), "nginx:1.0")
    template = karmada.api.get("apps/v1", "Deployment", ns, "held")
    policy = karmada.api.get("policy.karmada.io/v1alpha1", "PropagationPolicy", ns,
                             run.policy("held"))
    run.repo.commit({"gates/h.yaml": gate("h", run.bundle("held"), action="hold"),
                     **app_files(run, "held", "nginx:2.0", "b")}, "hold, roll 2.0")
    assert run.result(run.apply(), "held")["verdict"] == "held"
    misses = stays(lambda: karmada.image("member1", ns, "held") == "nginx:1.0"
                   and karmada.image("member2", ns, "held") == "nginx:1.0", WATCH)
    assert misses == []
    assert karmada.api.get("apps/v1", "Deployment", ns, "held")["metadata"][
        "resourceVersion"] == template["metadata"]["resourceVersion"]
    assert karmada.api.get("policy.karmada.io/v1alpha1", "PropagationPolicy", ns,
                           run.policy("held"))["metadata"][
        "resourceVersion"] == policy["metadata"]["resourceVersion"]


def test_a_bundle_removed_from_git_is_pruned_everywhere_unless_held(run, karmada):
    keep, gone = run.ns("keep"), run.ns("gone")
    run.repo.commit({**with_namespaces(run, "keep", "gone"),
                     **app_files(run, "keep", "nginx:1.0", "a"),
                     **app_files(run, "gone", "nginx:1.0", "a")}, "two apps")
    run.apply()
    on_both(karmada, lambda m: karmada.image(m, gone, "gone"), "nginx:1.0")
    on_both(karmada, lambda m: karmada.image(m, keep, "keep"), "nginx:1.0")

    # held: the app leaves Git under a hold gate; nothing is deleted anywhere
    run.repo.commit({"gates/h.yaml": gate("h", run.bundle("gone"), action="hold"),
                     "gone": None}, "remove gone, held")
    assert run.result(run.apply(), "gone")["verdict"] == "held"
    misses = stays(lambda: karmada.image("karmada", gone, "gone") == "nginx:1.0"
                   and karmada.image("member1", gone, "gone") == "nginx:1.0"
                   and karmada.image("member2", gone, "gone") == "nginx:1.0", 10)
    assert misses == []

    # open: the gate goes, the app is pruned from Karmada and from both members
    run.repo.commit({"gates/h.yaml": None}, "release")
    assert run.result(run.apply(), "gone")["verdict"] == "removed"
    assert karmada.image("karmada", gone, "gone") is None
    on_both(karmada, lambda m: karmada.image(m, gone, "gone"), None)
    on_both(karmada, lambda m: karmada.configmap(m, gone, "gone-config"), None)
    assert karmada.image("member1", keep, "keep") == "nginx:1.0"
