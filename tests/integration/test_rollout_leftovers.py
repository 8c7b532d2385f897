"""What left a rolling bundle's Git waits, live, for the last wave before it is deleted. A
leftover its own policies no longer select stays where Karmada left it, and a wave is not
judged on it; one the bundle's policies still select is dispatched to every cluster a wave
releases, so the wave is judged on it as on what is in Git. Through the real CLI against the
emulator, whose bindings dispatch like Karmada's controllers."""

from __future__ import annotations

import json
import textwrap
from datetime import timedelta

import pytest

from gitgate.cli import main
from tests.conftest import write_files
from tests.support.looping import T0, Clock
from tests.support.manifests import cm, deployment
from tests.support.webrepo import NS, web_repo

pytestmark = pytest.mark.integration
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}, "
           "{clusters: [member3]}], bake: 2s}\n")
MEMBERS = ("member1", "member2", "member3")


def own_policy(*names: str) -> str:
    """The bundle's own PropagationPolicy, naming the Deployments `names` and web-config."""
    selectors = "".join(f"\n    - {{apiVersion: apps/v1, kind: Deployment, name: {n}}}"
                        for n in names)
    return textwrap.dedent(f"""\
        ---
        apiVersion: policy.karmada.io/v1alpha1
        kind: PropagationPolicy
        metadata: {{name: web, namespace: {NS}}}
        spec:
          placement: {{clusterAffinity: {{clusterNames: [member1, member2, member3]}}}}
          resourceSelectors:
            - {{apiVersion: v1, kind: ConfigMap, name: web-config}}""") + selectors + "\n"


def apply(capsys, root, flags, clock) -> dict:
    capsys.readouterr()
    main(["apply", str(root), *flags, "-o", "json"], clock=clock)
    return {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}["web"]


def runs(emulator, name: str, cluster: str) -> int | None:
    key = emulator.state._binding_key(("", "", NS, name), "Deployment")
    member = emulator.state.members.get(key, {}).get(cluster)
    return member.runs if member and member.applied else None


def healthy(emulator, name, cluster):
    emulator.state.report(NS, "Deployment", name, cluster, health="Healthy")


def roll_out(capsys, root, flags, clock, emulator, names) -> None:
    for cluster in MEMBERS:
        apply(capsys, root, flags, clock)
        for name in names:
            healthy(emulator, name, cluster)
        apply(capsys, root, flags, clock)
        clock.advance(seconds=2.2)
    assert apply(capsys, root, flags, clock)["verdict"] == "apply"


def rolled_out_on_three(tmp_path, emulator, capsys):
    """web:1 rolled out on three members (the repo, its flags and the clock)."""
    root, flags = web_repo(tmp_path, emulator, ROLLOUT)
    write_files(root, {"gitgate.yaml": "defaults: {placement: {clusterAffinity: "
                                       "{clusterNames: [member1, member2, member3]}}}\n"})
    clock = Clock(T0, tick=timedelta(seconds=1))
    roll_out(capsys, root, flags, clock, emulator, ("web",))
    return root, flags, clock


def test_a_leftover_its_own_policy_still_selects_is_judged(tmp_path, emulator, capsys):
    """web:2 is Unhealthy on member1 (wave 1); a commit drops the Deployment from Git but its
    own policy still names it: member2 would get web:2 when wave 2 is released, so wave 1 is
    judged on it and member2 keeps web:1."""
    root, flags = web_repo(tmp_path, emulator, ROLLOUT)
    app = cm("web-config", NS) + own_policy("web", "api")
    write_files(root, {"web/app.yaml": app + deployment("web", NS, "web:1")
                       + deployment("api", NS, "api:1", "web-config")})
    clock = Clock(T0, tick=timedelta(seconds=1))
    roll_out(capsys, root, flags, clock, emulator, ("web", "api"))
    assert (runs(emulator, "web", "member1"), runs(emulator, "web", "member2")) == (1, 1)

    write_files(root, {"web/app.yaml": app + deployment("web", NS, "web:2")
                       + deployment("api", NS, "api:1", "web-config")})
    assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
    assert (runs(emulator, "web", "member1"), runs(emulator, "web", "member2")) == (2, 1)

    write_files(root, {"web/app.yaml": app + deployment("api", NS, "api:2", "web-config")})
    for _ in range(3):
        assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
        healthy(emulator, "api", "member1")
        clock.advance(seconds=2.2)
    # web:2 was never judged healthy: wave 2 is not released, member2 keeps web:1
    assert [runs(emulator, n, "member2") for n in ("web", "api")] == [1, 1]


def test_a_renamed_workload_releases_the_wave_and_its_leftover_stays_behind(
        tmp_path, emulator, capsys):
    """web:2 is Unhealthy on member1; a commit renames the Deployment (web-new, web:3). The
    generated policy no longer selects web: the wave is judged on web-new alone, and as the
    next wave is released, member2 keeps the web:1 it ran until web is deleted."""
    root, flags, clock = rolled_out_on_three(tmp_path, emulator, capsys)
    write_files(root, {"web/app.yaml": cm("web-config", NS) + deployment("web", NS, "web:2")})
    assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
    assert (runs(emulator, "web", "member1"), runs(emulator, "web", "member2")) == (2, 1)

    write_files(root, {"web/app.yaml": cm("web-config", NS)
                       + deployment("web-new", NS, "web:3", "web-config")})
    for _ in range(4):
        apply(capsys, root, flags, clock)
        healthy(emulator, "web-new", "member1")
        clock.advance(seconds=2.2)
    assert runs(emulator, "web-new", "member2") == 1  # wave 2 released
    assert runs(emulator, "web", "member2") == 1  # the leftover's web:2 never reached it


def test_a_wave_is_judged_on_objects_whose_namespace_the_bundle_defaults(
        tmp_path, emulator, capsys):
    """The bundle's `namespace:` places the Deployment, written without one: it is the one
    its record lists, so the wave is judged on it (web stays Unhealthy: no next wave)."""
    root, flags = web_repo(tmp_path, emulator, ROLLOUT + f"namespace: {NS}\n")
    write_files(root, {"web/app.yaml": cm("web-config", NS) + deployment("web", NS).replace(
        f", namespace: {NS}", "")})
    assert (root / "web/app.yaml").read_text().count("namespace") == 1  # the ConfigMap's
    clock = Clock(T0, tick=timedelta(seconds=1))
    for _ in range(3):
        assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
        clock.advance(seconds=2.2)
    assert runs(emulator, "web", "member1") == 1 and runs(emulator, "web", "member2") is None


def test_a_rolling_bundle_emptied_in_git_rolls_out_and_deletes_its_leftovers(
        tmp_path, emulator, capsys):
    """Nothing left in Git, so nothing to judge: each wave is ready once released and bakes;
    after the last, what left Git is deleted (until then it stays as Karmada left it)."""
    root, flags, clock = rolled_out_on_three(tmp_path, emulator, capsys)
    write_files(root, {"web/app.yaml": "\n"})
    for _ in range(3):
        assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
        assert runs(emulator, "web", "member3") == 1
        clock.advance(seconds=2.2)
    for _ in range(4):  # the bundle is most of what gitgate manages: its prune is intended
        apply(capsys, root, [*flags, "--allow-mass-prune"], clock)
        clock.advance(seconds=2.2)
    assert emulator.state.object("apps", "deployments", NS, "web") is None


def test_another_bundles_policy_naming_a_leftover_does_not_take_it(tmp_path, emulator, capsys):
    """web:2 is Unhealthy on member1; one commit drops web from Git and adds, in another
    folder, a PropagationPolicy naming it: that policy would claim the leftover once web's
    own policy lets go, and send web:2 everywhere, past the rollout: its bundle fails."""
    root, flags, clock = rolled_out_on_three(tmp_path, emulator, capsys)
    write_files(root, {"web/app.yaml": cm("web-config", NS) + deployment("web", NS, "web:2")})
    assert apply(capsys, root, flags, clock)["verdict"] == "suspended"
    write_files(root, {"web/app.yaml": cm("web-config", NS),
                       "x/bundle.yaml": "name: x\ndependsOn: [ns]\n",
                       "x/pp.yaml": textwrap.dedent(f"""\
                           apiVersion: policy.karmada.io/v1alpha1
                           kind: PropagationPolicy
                           metadata: {{name: grab, namespace: {NS}}}
                           spec:
                             placement: {{clusterAffinity: {{clusterNames: [member2, member3]}}}}
                             resourceSelectors:
                               - {{apiVersion: apps/v1, kind: Deployment, name: web}}
                           """)})
    for _ in range(2):
        capsys.readouterr()
        main(["apply", str(root), *flags, "-o", "json"], clock=clock)
        x = {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}["x"]
        assert x["reason"] == "PolicyTakeover" and "live in bundle web" in x["message"], x
        clock.advance(seconds=2.2)
    assert [runs(emulator, "web", c) for c in MEMBERS] == [2, 1, 1]
