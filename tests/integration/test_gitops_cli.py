"""pause, resume and approve on temporary git repos: one commit each, touching only the gate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git
import pytest

from gitgate.cli import main
from gitgate.yamlio import load_one
from tests.conftest import EXAMPLES, committed_repo, set_identity, write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration

FILES = {
    "gitgate.yaml": "paths: [apps]\n",
    "apps/payments/bundle.yaml": "name: payments\nlabels: {team: pay}\n",
    "apps/payments/app.yaml": """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: api, namespace: pay}
        spec:
          selector: {matchLabels: {app: api}}
          template:
            metadata: {labels: {app: api}}
            spec: {containers: [{name: api, image: "api:1"}]}
    """,
    "apps/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: w}\n",
}


@pytest.fixture
def repo(tmp_path: Path, tools) -> git.Repo:
    root = write_files(tmp_path / "config", FILES)
    return committed_repo(root)


def changed_files(commit: git.Commit) -> list[str]:
    return sorted(commit.stats.files)


def plan_json(root: Path, capsys, *extra: str) -> dict:
    capsys.readouterr()
    main(["plan", str(root), "-o", "json", *extra])
    return {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}


def test_pause_commits_only_the_gate_file_and_holds(repo, capsys):
    root = Path(repo.working_tree_dir)
    (root / "apps/web/cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                           "metadata: {name: web2, namespace: w}\n")
    repo.git.add("apps/web/cm.yaml")  # staged work of someone else must stay out of the commit
    before = repo.head.commit
    assert main(["pause", "payments", "--reason", "INC-42", "--for", "2h",
                 "--repo", str(root)]) == 0
    commit = repo.head.commit
    assert commit.parents == (before,)
    assert commit.message.strip() == "pause payments: INC-42"
    assert commit.author.name == "On Call" and commit.author.email == "oncall@example.com"
    assert changed_files(commit) == ["gates/pause-payments.yaml"]
    assert "apps/web/cm.yaml" in [d.a_path for d in repo.index.diff("HEAD")]
    gate = load_one((root / "gates/pause-payments.yaml").read_text())
    assert gate["spec"]["bundles"] == ["payments"] and gate["spec"]["reason"] == "INC-42"
    assert gate["spec"]["until"].endswith("Z")
    plan = plan_json(root, capsys)
    assert plan["payments"]["verdict"] == "held"
    assert plan["payments"]["reasons"][0]["gate"] == "pause-payments"
    assert plan["apps-web"]["verdict"] == "apply"


def test_pause_by_labels_with_suspend_on_clusters(repo, capsys):
    root = Path(repo.working_tree_dir)
    assert main(["pause", "team=pay", "--reason", "cut-over", "--action", "suspend",
                 "--clusters", "member2", "--repo", str(root)]) == 0
    gate = load_one((root / "gates/pause-team-pay.yaml").read_text())
    assert gate["spec"]["selector"] == {"matchLabels": {"team": "pay"}}
    plan = plan_json(root, capsys)
    assert plan["payments"]["verdict"] == "suspended"


def test_resume_removes_the_covering_gate_in_one_commit(repo, capsys):
    root = Path(repo.working_tree_dir)
    main(["pause", "pay*", "--reason", "freeze", "--repo", str(root)])
    before = repo.head.commit
    capsys.readouterr()
    # `pay*` was paused, not `payments`: the gate is named, not removed
    assert main(["resume", "payments", "--repo", str(root)]) == 2
    assert "`gitgate resume pause-pay` lifts it" in capsys.readouterr().err
    assert repo.head.commit == before
    assert main(["resume", "pay*", "--repo", str(root)]) == 0
    commit = repo.head.commit
    assert commit.parents == (before,) and changed_files(commit) == ["gates/pause-pay.yaml"]
    assert not (root / "gates/pause-pay.yaml").exists()
    assert commit.message.startswith("resume pay*")
    assert plan_json(root, capsys)["payments"]["verdict"] == "apply"


def test_approve_writes_the_current_digest_and_lets_only_that_content_through(repo, capsys):
    root = Path(repo.working_tree_dir)
    main(["pause", "payments", "--reason", "freeze", "--repo", str(root)])
    digest = plan_json(root, capsys)["payments"]["digest"]
    before = repo.head.commit
    assert main(["approve", "payments", "--repo", str(root)]) == 0
    commit = repo.head.commit
    assert commit.parents == (before,) and changed_files(commit) == ["gates/pause-payments.yaml"]
    gate = load_one((root / "gates/pause-payments.yaml").read_text())
    assert gate["spec"]["approve"] == {"bundle": "payments", "digest": digest}
    plan = plan_json(root, capsys)
    assert plan["payments"]["verdict"] == "apply"
    assert plan["payments"]["reasons"][0]["kind"] == "approved"
    app = root / "apps/payments/app.yaml"
    app.write_text(app.read_text().replace("api:1", "api:2"))
    assert plan_json(root, capsys)["payments"]["verdict"] == "held"


def test_refusals_detached_head_and_unknown_selector(repo, capsys):
    root = Path(repo.working_tree_dir)
    assert main(["pause", "nothing-like-this", "--reason", "x", "--repo", str(root)]) == 2
    assert "matches no bundle" in capsys.readouterr().err
    assert main(["resume", "paymnets", "--repo", str(root)]) == 2  # a typo is an error
    assert "'paymnets' names no gate and selects no bundle; closest: payments" in \
        capsys.readouterr().err
    assert main(["pause", "payments", "--reason", "x", "--until", "2020-01-01T00:00:00Z",
                 "--repo", str(root)]) == 2
    assert "in the past" in capsys.readouterr().err
    repo.git.checkout("--detach")
    head = repo.head.commit
    assert main(["pause", "payments", "--reason", "x", "--repo", str(root)]) == 2
    assert "detached" in capsys.readouterr().err
    assert repo.head.commit == head and not (root / "gates").exists()


def test_plan_at_shows_transitions_of_until_and_windows(repo, capsys):
    root = Path(repo.working_tree_dir)
    write_files(root, {"gates/freeze.yaml": """
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {name: freeze}
        spec:
          bundles: ["*"]
          reason: weekend freeze
          windows: [{cron: "0 18 * * 5", duration: 62h, timeZone: Europe/Berlin}]
    """, "gates/inc.yaml": """
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {name: inc}
        spec: {bundles: [payments], reason: INC-1, until: "2026-11-25T00:00:00Z"}
    """})
    wednesday = plan_json(root, capsys, "--at", "2026-11-18T12:00:00Z")
    assert wednesday["payments"]["verdict"] == "held"
    assert wednesday["payments"]["nextChange"] == "2026-11-20T17:00:00Z"
    assert wednesday["apps-web"]["verdict"] == "apply"
    assert wednesday["apps-web"]["nextChange"] == "2026-11-20T17:00:00Z"
    saturday = plan_json(root, capsys, "--at", "2026-11-21T12:00:00Z")
    assert saturday["apps-web"]["verdict"] == "held"
    assert saturday["apps-web"]["nextChange"] == "2026-11-23T07:00:00Z"
    later = plan_json(root, capsys, "--at", "2026-11-25T00:00:00Z")
    assert later["payments"]["verdict"] == "apply"
    capsys.readouterr()
    main(["gates", str(root), "--at", "2026-11-18T12:00:00Z", "-o", "json"])
    gates = {g["name"]: g for g in json.loads(capsys.readouterr().out)["gates"]}
    assert gates["freeze"]["active"] is False and gates["inc"]["active"] is True
    assert gates["inc"]["covers"] == ["payments"]
    assert gates["inc"]["nextChange"] == "2026-11-25T00:00:00Z"


def origin_of(repo: git.Repo, tmp_path: Path) -> git.Repo:
    """A bare `origin` the repo's main branch is pushed to."""
    remote = git.Repo.init(tmp_path / "origin.git", bare=True, initial_branch="main")
    repo.create_remote("origin", remote.working_dir)
    repo.git.push("origin", "main")
    return remote


def test_pause_push_sends_the_commit_to_origin(repo, tmp_path, capsys):
    root = Path(repo.working_tree_dir)
    remote = origin_of(repo, tmp_path)
    assert main(["pause", "payments", "--reason", "INC-9", "--repo", str(root), "--push"]) == 0
    assert remote.commit("main").hexsha == repo.head.commit.hexsha
    assert remote.commit("main").message.strip() == "pause payments: INC-9"


# ------------------------------------------------------------------ what pause/resume/approve
# must and must not do (issue 11)

def commit_all(repo: git.Repo, message: str) -> None:
    repo.git.add("-A")
    repo.git.commit("-m", message)


ALWAYS_ON = '{cron: "* * * * *", duration: 2m}'  # a window that is open whenever a test runs


def test_resume_lifts_only_what_was_meant_and_names_the_gates_it_will_not_touch(repo, capsys):
    root = Path(repo.working_tree_dir)
    write_files(root, {"gates/freeze.yaml": """
        # change freeze for the migration, owned by the platform team
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata:
            name: freeze
        spec:
            bundles:
            - "payments"
            - 'apps-web'
            reason: "migration"
    """, "gates/weekend.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: weekend}}
        spec: {{bundles: ["*"], reason: weekend freeze, windows: [{ALWAYS_ON}]}}
    """})
    commit_all(repo, "team gates")
    assert main(["pause", "*", "--reason", "INC-7", "--repo", str(root)]) == 0
    head = repo.head.commit
    capsys.readouterr()

    assert main(["resume", "payments", "--repo", str(root)]) == 2
    err = capsys.readouterr().err
    assert "nothing was changed" in err
    assert ("gates/pause-all.yaml: gate pause-all holds payments and was not written by "
            "`gitgate pause payments`") in err
    assert "gates/weekend.yaml: gate weekend is a recurring freeze" in err
    assert "`gitgate resume weekend` lifts it" in err
    assert "`gitgate resume freeze` lifts it" in err  # a team's list is not narrowed either
    assert repo.head.commit == head
    assert (root / "gates/pause-all.yaml").exists() and (root / "gates/weekend.yaml").exists()

    # the on-call's own pause goes; the team's freeze stays, named
    assert main(["pause", "payments", "--reason", "INC-8", "--repo", str(root)]) == 0
    capsys.readouterr()
    freeze_before = (root / "gates/freeze.yaml").read_text()
    assert main(["resume", "payments", "--repo", str(root)]) == 0
    out = capsys.readouterr().out
    assert "remove gate pause-payments" in out
    assert "still held: gates/freeze.yaml: gate freeze holds payments" in out
    assert changed_files(repo.head.commit) == ["gates/pause-payments.yaml"]
    assert (root / "gates/freeze.yaml").read_text() == freeze_before

    for name in ("pause-all", "weekend", "freeze"):
        assert main(["resume", name, "--repo", str(root)]) == 0
    assert changed_files(repo.head.commit) == ["gates/freeze.yaml"]
    plan = plan_json(root, capsys)
    assert plan["payments"]["verdict"] == "apply" and plan["apps-web"]["verdict"] == "apply"


def test_an_empty_reason_is_refused_before_anything_is_written(repo, capsys):
    root = Path(repo.working_tree_dir)
    head = repo.head.commit
    assert main(["pause", "payments", "--reason", "  ", "--repo", str(root)]) == 2
    assert "--reason must say why" in capsys.readouterr().err
    assert repo.head.commit == head and not (root / "gates").exists()


def test_pausing_twice_says_so_and_extends_only_when_asked_for_longer(repo, capsys):
    root = Path(repo.working_tree_dir)
    assert main(["pause", "payments", "--reason", "INC-8", "--for", "1h",
                 "--repo", str(root)]) == 0
    first = repo.head.commit
    until = load_one((root / "gates/pause-payments.yaml").read_text())["spec"]["until"]
    capsys.readouterr()

    assert main(["pause", "payments", "--reason", "INC-8", "--for", "30m",
                 "--repo", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"already paused by gates/pause-payments.yaml until {until}" in out
    assert "nothing changed" in out and repo.head.commit == first

    assert main(["pause", "payments", "--reason", "INC-8", "--for", "3h",
                 "--repo", str(root)]) == 0
    assert "extended until" in capsys.readouterr().out
    assert repo.head.commit.parents == (first,)
    assert sorted(p.name for p in (root / "gates").iterdir()) == ["pause-payments.yaml"]
    later = load_one((root / "gates/pause-payments.yaml").read_text())["spec"]["until"]
    assert later > until


def test_approve_lets_the_committed_content_through_and_refuses_a_dirty_gate(repo, capsys):
    root = Path(repo.working_tree_dir)
    write_files(root, {"gates/hold.yaml": """
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata:
            name: hold
        spec:
            bundles:
            - 'payments'
            reason: "release train"   # until Friday
    """})
    commit_all(repo, "hold payments")
    committed = plan_json(root, capsys)["payments"]["digest"]
    app = root / "apps/payments/app.yaml"
    app.write_text(app.read_text().replace("api:1", "api:2"))  # not committed
    gate = root / "gates/hold.yaml"
    original = gate.read_text()

    gate.write_text(original + "# a note not yet committed\n")
    head = repo.head.commit
    assert main(["approve", "payments", "--repo", str(root)]) == 2
    assert "hold.yaml has uncommitted changes" in capsys.readouterr().err
    assert repo.head.commit == head
    gate.write_text(original)

    assert main(["approve", "payments", "--repo", str(root)]) == 0
    assert changed_files(repo.head.commit) == ["gates/hold.yaml"]
    approved = load_one(gate.read_text())["spec"]["approve"]
    assert approved == {"bundle": "payments", "digest": committed}
    assert gate.read_text().startswith(original.rstrip("\n"))  # quoting, comment, indent kept
    assert plan_json(root, capsys)["payments"]["verdict"] == "held"  # the edit is not approved
    app.write_text(app.read_text().replace("api:2", "api:1"))
    assert plan_json(root, capsys)["payments"]["verdict"] == "apply"


def test_a_push_race_is_resolved_by_rebasing_the_one_commit(repo, tmp_path, capsys):
    root = Path(repo.working_tree_dir)
    remote = origin_of(repo, tmp_path)
    teammate = git.Repo.clone_from(remote.working_dir, tmp_path / "teammate")
    set_identity(teammate, "Teammate", "t@example.com")
    write_files(Path(teammate.working_tree_dir), {"apps/web/more.yaml": cm_text("more")})
    commit_all(teammate, "teammate's change")
    teammate.git.push("origin", "main")

    paused = gitgate("pause", "payments", "--reason", "INC-10", "--push", "--repo", str(root))
    assert paused.returncode == 0, paused.stderr
    assert "rebased onto the remote 1x first" in paused.stdout
    assert paused.stderr == ""  # git's "failed to push some refs" of the first try is not said
    tip = remote.commit("main")
    assert tip.message.strip() == "pause payments: INC-10"
    assert tip.parents[0].message.strip() == "teammate's change"
    assert repo.head.commit == tip and changed_files(tip) == ["gates/pause-payments.yaml"]


def cm_text(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: w}}\n"


def test_pause_clusters_are_checked_against_karmadas_clusters(repo, kube, capsys):
    if kube.emulator is None:
        pytest.skip("needs the emulator's Cluster objects (a real cluster has its own)")
    for name in ("member1", "member2"):
        kube.cluster.apply({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                            "metadata": {"name": name}, "spec": {"syncMode": "Push"}})
    root = Path(repo.working_tree_dir)
    before = repo.head.commit
    capsys.readouterr()
    assert main(["pause", "payments", "--reason", "migration", "--action", "suspend",
                 "--clusters", "member2,member9", "--repo", str(root),
                 "--kubeconfig", kube.kubeconfig]) == 2
    err = capsys.readouterr().err
    assert "no member cluster named member9 in Karmada (its clusters: member1, member2)" in err
    assert repo.head.commit == before and not (root / "gates").exists()

    assert main(["pause", "payments", "--reason", "migration", "--action", "suspend",
                 "--clusters", "member2", "--repo", str(root),
                 "--kubeconfig", kube.kubeconfig]) == 0
    gate = load_one((root / "gates/pause-payments.yaml").read_text())
    assert gate["spec"]["clusters"] == ["member2"]


def test_pause_never_writes_through_a_symlinked_gates_folder(repo, tmp_path, capsys):
    import os

    root = Path(repo.working_tree_dir)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, root / "gates")
    assert main(["pause", "payments", "--reason", "INC-7", "--repo", str(root)]) == 2
    assert "gates is a symlink" in capsys.readouterr().err
    assert list(outside.iterdir()) == []


def test_a_label_resume_in_the_example_repo_leaves_the_blue_green_suspension(tmp_path, tools):
    """Issue 28, item 1, as reported: `pause tier=backend` then `resume tier=backend` in a copy
    of examples/repo removed the pause and the blue/green suspension of member2 for
    shop/payment. Run as a user runs it: the real CLI in a subprocess."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    committed_repo(root)
    paused = gitgate("pause", "tier=backend", "--reason", "x", "--for", "1h", "--repo", str(root))
    assert paused.returncode == 0, paused.stderr
    resumed = gitgate("resume", "tier=backend", "--repo", str(root))
    assert resumed.returncode == 0, resumed.stderr
    assert "remove gate pause-tier-backend" in resumed.stdout
    assert ("still held: gates/shop-payment-migration.yaml: gate shop-payment-migration "
            "suspends shop/payment") in resumed.stdout
    assert "`gitgate resume shop-payment-migration` lifts it" in resumed.stdout
    assert (root / "gates/shop-payment-migration.yaml").exists()
    assert not (root / "gates/pause-tier-backend.yaml").exists()
    # on a Wednesday: the example's weekend freeze (Friday 18:00 Berlin, 62 h) holds nothing
    plan = json.loads(gitgate("plan", str(root), "--at", "2026-11-25T12:00:00Z",
                              "-o", "json").stdout)
    payment = next(b for b in plan["bundles"] if b["name"] == "shop/payment")
    assert payment["verdict"] == "suspended"
    assert [(r["gate"], r.get("clusters")) for r in payment["reasons"]] == [
        ("shop-payment-migration", ["member2"])]


def test_a_pause_that_was_not_pushed_says_it_is_not_on_yet(tmp_path, tools):
    """Issue 28, item 4: `pause` without --push said nothing of the freeze not being on for
    the loop that follows the remote. It says so, with the command that pushes."""
    bare = git.Repo.init(tmp_path / "remote.git", bare=True, initial_branch="main")
    local = write_files(tmp_path / "seed", FILES)
    seed = committed_repo(local)
    seed.create_remote("origin", bare.working_dir)
    seed.git.push("origin", "main")
    work = git.Repo.clone_from(bare.working_dir, tmp_path / "work")
    set_identity(work)
    root = work.working_tree_dir
    paused = gitgate("pause", "payments", "--reason", "INC-3", "--repo", root)
    assert paused.returncode == 0, paused.stderr
    assert "not pushed: a `gitgate run` following origin does not see this yet" in paused.stderr
    assert f"push it now: git -C {root} push origin main (or use --push)" in paused.stderr
    assert bare.head.commit == seed.head.commit  # nothing was pushed
    work.git.push("origin", "main")  # what the message says to do
    resumed = gitgate("resume", "payments", "--repo", root, "--push")
    assert resumed.returncode == 0, resumed.stderr
    assert "not pushed" not in resumed.stderr and "pushed" in resumed.stdout
    lone = write_files(tmp_path / "lone", FILES)
    committed_repo(lone)
    alone = gitgate("pause", "payments", "--reason", "INC-4", "--repo", str(lone))
    assert alone.returncode == 0, alone.stderr
    assert "not pushed: the repo has no remote" in alone.stderr


def test_a_second_pause_keeps_every_reason_with_who_and_when(repo, tmp_path):
    """Issue 28, item 9: `INC-9` extended `INC-7`'s gate and appeared nowhere. Every reason is
    kept in the gate, with who gave it and when, and shown wherever the bundle is held."""
    root = repo.working_tree_dir
    set_identity(repo, "Alice Ops", "alice@example.com")
    first = gitgate("pause", "payments", "--reason", "INC-7", "--for", "1h", "--repo", root)
    assert first.returncode == 0, first.stderr
    set_identity(repo, "Bob Ops", "bob@example.com")
    second = gitgate("pause", "payments", "--reason", "INC-9", "--for", "30m", "--repo", root)
    assert second.returncode == 0, second.stderr
    assert "added the reason 'INC-9' beside 'INC-7'" in second.stdout  # shorter: not extended
    gate = load_one((Path(root) / "gates/pause-payments.yaml").read_text())
    assert gate["spec"]["reason"] == "INC-7"
    assert gate["metadata"]["annotations"]["gitgate.io/paused-by"] == \
        "Alice Ops <alice@example.com>"
    [added] = gate["spec"]["reasons"]
    assert added["reason"] == "INC-9" and added["by"] == "Bob Ops <bob@example.com>"
    assert repo.head.commit.message.startswith("pause payments: INC-9")
    again = gitgate("pause", "payments", "--reason", "INC-9", "--for", "10m", "--repo", root)
    assert "nothing changed" in again.stdout  # the same reason is not kept twice

    plan = json.loads(gitgate("plan", root, "-o", "json").stdout)
    held = next(b for b in plan["bundles"] if b["name"] == "payments")
    [why] = held["reasons"]
    assert "INC-7 (Alice Ops," in why["reason"] and "INC-9 (Bob Ops," in why["reason"]
    gates = gitgate("gates", root).stdout
    assert "INC-7 (Alice Ops" in gates and "INC-9 (Bob Ops" in gates
    resumed = gitgate("resume", "payments", "--repo", root)
    assert "lifts INC-7 (Alice Ops" in resumed.stdout and "INC-9 (Bob Ops" in resumed.stdout


def test_resuming_what_is_not_paused_is_not_an_error(repo):
    """Issue 28, item 11: `resume` of a bundle nothing holds exited 2 as [InvalidConfig],
    turning the example pause workflow red. It says so and exits 0. A bundle held by a gate
    resume may not lift exits 2, one line per holder (not a literal \\n)."""
    root = repo.working_tree_dir
    done = gitgate("resume", "payments", "--repo", root)
    assert done.returncode == 0, done.stderr
    assert "payments is not paused: no active gate holds it" in done.stdout
    write_files(Path(root), {"gates/team.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                             "metadata: {name: team}\nspec: {bundles: [payments], reason: x}\n"})
    commit_all(repo, "a team freeze")
    held = gitgate("resume", "payments", "--repo", root)
    assert held.returncode == 2
    first, second = held.stderr.splitlines()[:2]
    assert first.startswith("error: nothing was changed")
    assert second.startswith("  gates/team.yaml: gate team holds payments") and "\\n" not in first
