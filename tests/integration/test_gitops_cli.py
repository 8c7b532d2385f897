"""pause, resume and approve on temporary git repos: one commit each, touching only the gate."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from gitgate.cli import main
from gitgate.yamlio import load_one
from tests.conftest import write_files

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
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "On Call")
        config.set_value("user", "email", "oncall@example.com")
    repo.git.add("-A")
    repo.git.commit("-m", "initial")
    return repo


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
    assert main(["resume", "payments", "--repo", str(root)]) == 0
    commit = repo.head.commit
    assert commit.parents == (before,) and changed_files(commit) == ["gates/pause-pay.yaml"]
    assert not (root / "gates/pause-pay.yaml").exists()
    assert commit.message.startswith("resume payments")
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
    assert main(["resume", "payments", "--repo", str(root)]) == 2
    assert "no gate" in capsys.readouterr().err
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


def test_pause_push_sends_the_commit_to_origin(repo, tmp_path, capsys):
    root = Path(repo.working_tree_dir)
    remote = git.Repo.init(tmp_path / "origin.git", bare=True, initial_branch="main")
    repo.create_remote("origin", remote.working_dir)
    repo.git.push("origin", "main")
    assert main(["pause", "payments", "--reason", "INC-9", "--repo", str(root), "--push"]) == 0
    assert remote.commit("main").hexsha == repo.head.commit.hexsha
    assert remote.commit("main").message.strip() == "pause payments: INC-9"
