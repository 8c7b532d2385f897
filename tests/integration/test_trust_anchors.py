"""Trust anchors that never reset silently (issue 60, item 3), with keys made here by the real
`ssh-keygen` and `gpg` and the real CLI in a subprocess against the API emulator:
- a history rewritten without the gate, by an allowed signer who is no gate signer, is refused
  by `gitgate run` (held stays held, the baseline stays) and by `check --since` with the same
  flags, and the refusal outlives a restart with a new cache;
- the revisions a loop trusts outlive a restart with a new cache (they are recorded on the
  API server), so a change made while it was down is judged against them;
- an OpenPGP user id whose comment holds a gate signer's address does not make its key one;
- an SSH key whose allowed-signers entry has expired does not sign, however the commit is
  dated;
- no gpg daemon outlives the gitgate process that made the keyring;
- the commit that decides a freeze file is the one that brought its content into the history
  since the trusted revision: a merge that takes a gate signer's old, unmerged version (onto
  main, into the stale branch, octopus, criss-cross, after a deletion) or keeps its branch's
  version over the other side's change is its signer's decision (`History`: real keys, the
  judge directly; `check --since` for the first case);
- freeze files named outside ASCII are judged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import git as gitpython
import pytest

from gitgate.passes.recorded import read_document
from gitgate.source.signatures import Trust
from tests.conftest import REPO_ROOT, set_identity
from tests.support.daemons import MARK, gpg_daemons_left
from tests.support.histories import History
from tests.support.hostile import gitgate
from tests.support.http import free_port, get, until
from tests.support.looping import Upstream
from tests.support.signing import NEEDED, Keys, allowed_signers
from tests.support.signing import push_signed as push

pytestmark = [pytest.mark.integration, NEEDED]

PLACED = "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n"


@pytest.fixture
def keys(tmp_path):
    made = Keys(tmp_path, ("alice", "carol"))
    yield made
    made.close()


class Loop:
    """`gitgate run` in a subprocess, with its own cache folder and port."""

    def __init__(self, upstream: Upstream, kube, tmp_path: Path, name: str, *flags: str):
        self.port = free_port()
        self.log = tmp_path / f"{name}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gitgate.cli", "run", "--repo", upstream.url,
             "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id, "--interval", "1s",
             "--cache-dir", str(tmp_path / f"cache-{name}"), "--no-leader-elect",
             "--listen", f"127.0.0.1:{self.port}", "--log-format", "json", *flags],
            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=self.log.open("w"))

    def status(self) -> dict:
        code, body = get(f"http://127.0.0.1:{self.port}/status")
        assert self.process.poll() is None, self.log.read_text()
        return json.loads(body) if code == 200 else {}

    def metrics(self) -> str:
        return get(f"http://127.0.0.1:{self.port}/metrics")[1].decode()

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            assert self.process.wait(timeout=30) == 0
        said = self.log.read_text()
        assert "Traceback" not in said, said
        return said


def app_value(kube, upstream) -> str | None:
    found = kube.cluster.get("v1", "ConfigMap", upstream.ns, "settings")
    return found["data"]["value"] if found else None


def recorded(kube) -> dict:
    return read_document(kube.cluster, kube.run_id, "provenance") or {}


def judged(loop: Loop, head: str) -> dict:
    """/status once the loop has judged `head` (its freeze files, in `gateTrust`)."""
    found: dict = {}

    def seen() -> bool:
        found.update(loop.status())
        gates = found.get("gateTrust") or {}
        return gates.get("head") == head and found.get("revision") == gates.get("inForce", head)
    until(seen, 60, f"the loop judged {head[:12]}")
    return found


def test_a_history_rewritten_without_the_gate_is_refused_by_run_and_check_alike(
        tmp_path, kube, keys):
    """carol may sign deploys, alice alone may change a freeze. carol force-pushes a signed
    history that never had alice's gate: the loop keeps alice's revision in force (the app
    stays held) and its baseline, says so in the log, /status, `status` and the metric, and
    keeps refusing after a restart with a new cache; `check --since` with the loop's flags
    fails the same head. alice re-adding and removing the gate, signed, is taken."""
    upstream = Upstream(tmp_path, kube)
    initial = upstream.work.head.commit.hexsha
    gate_signers = allowed_signers(tmp_path / "gate_signers", keys.folder, "alice")
    allowed = allowed_signers(tmp_path / "allowed_signers", keys.folder, "alice", "carol")
    flags = ["--verify-commits", "--allowed-signers", str(allowed), "--allowed-gpg-keys",
             str(keys.allowed_gpg), "--gate-signers", str(gate_signers)]
    incident = upstream.gate("incident", f'{{bundles: ["{upstream.run}-app"], reason: INC-1}}')
    frozen = push(upstream, keys, "alice", incident, "freeze")
    first = Loop(upstream, kube, tmp_path, "first", *flags)
    try:
        judged(first, frozen)
        until(lambda: (recorded(kube).get("gateTrust") or {}).get("head") == frozen, 30,
              "the first judgement recorded")
        assert app_value(kube, upstream) is None  # held

        upstream.work.git.reset("--hard", initial)  # a history without the gate
        rewritten = push(upstream, keys, "carol", {"app/cm.yaml": upstream.configmap("two")},
                         "rewrite, signed by an allowed key")
        served = judged(first, rewritten)
        assert served["revision"] == frozen and app_value(kube, upstream) is None
        assert served["gateTrust"]["headRefused"] is True
        assert served["gateTrust"]["inForce"] == frozen
        assert "gitgate_gates_trusted 0.0" in first.metrics()
        until(lambda: (recorded(kube).get("gateTrust") or {}).get("head") == rewritten, 30,
              "the refusal recorded")
        assert recorded(kube)["anchors"]["gatesTrusted"] == frozen  # the baseline stays
    finally:
        said = first.stop()
    assert f"head {rewritten[:12]} refused: its history does not contain the trusted " \
           f"revision {frozen[:12]}" in said
    assert f"{frozen[:12]} stays in force" in said
    shown = gitgate("status", "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id)
    assert f"head {rewritten[:12]} refused" in shown.stderr + shown.stdout

    # CI judges the same head as the loop, with the loop's flags: refused
    check = gitgate("check", str(upstream.root), "--since", frozen, *flags, "-o", "json")
    assert check.returncode == 1, check.stdout + check.stderr
    [case] = [c for c in json.loads(check.stdout)["cases"] if c["class"] == "commit"]
    [failure] = case["failures"]
    assert failure["type"] == "UntrustedGates"
    assert f"refuses {rewritten[:12]} and keeps {frozen} in force" in failure["message"]

    # a restart with a new cache: the recorded baseline, not the first head seen
    second = Loop(upstream, kube, tmp_path, "second", *flags)
    try:
        served = judged(second, rewritten)
        assert served["revision"] == frozen and app_value(kube, upstream) is None
        assert served["gateTrust"]["headRefused"] is True

        # alice takes the gate back and lifts it, signed: the new history counts now
        push(upstream, keys, "alice", incident, "the gate again")
        lifted = push(upstream, keys, "alice", {"gates/incident.yaml": None}, "lift, signed")
        served = judged(second, lifted)
        assert served["gateTrust"]["headRefused"] is False and served["gateTrust"]["refused"] \
            == []
        until(lambda: app_value(kube, upstream) == "two", 30, "the lifted app applied")
        until(lambda: recorded(kube)["anchors"]["gatesTrusted"] == lifted, 30,
              "the baseline moved on")
    finally:
        second.stop()
    # run's keyrings (--allowed-gpg-keys) left no daemon; the test's own keys still sign
    assert [d for d in gpg_daemons_left(os.environ[MARK], timeout=5)
            if f"--homedir {keys.gnupg} " not in d] == []


def test_the_revisions_a_loop_trusts_outlive_a_restart_with_a_new_cache(tmp_path, kube, keys):
    """gitgate.yaml declares the allowed signers (alice, carol) and the gate signers (alice).
    While the loop is down, carol lifts alice's freeze, then someone drops `verify:` and
    `gates:` unsigned; each restart starts from a new cache, and the freeze holds."""
    upstream = Upstream(tmp_path, kube)
    config = ("verify:\n  allowedSigners: .gitgate/allowed_signers\n"
              "gates:\n  signers: [alice@example.com]\n")
    both = allowed_signers(tmp_path / "both", keys.folder, "alice", "carol").read_text()
    incident = upstream.gate("incident", f'{{bundles: ["{upstream.run}-app"], reason: INC-1}}')
    frozen = push(upstream, keys, "alice", {"gitgate.yaml": config,
                                            ".gitgate/allowed_signers": both, **incident},
                  "freeze, signed")
    first = Loop(upstream, kube, tmp_path, "first")
    try:
        until(lambda: (recorded(kube).get("gateTrust") or {}).get("head") == frozen, 60,
              "the first judgement recorded")
    finally:
        first.stop()
    anchors = {"source": f"{upstream.url}#main", "verified": frozen, "gatesTrusted": frozen}

    lifted = push(upstream, keys, "carol", {"gates/incident.yaml": None,
                                            "app/cm.yaml": upstream.configmap("two")},
                  "lift it, signed by an allowed key")
    second = Loop(upstream, kube, tmp_path, "second")
    try:
        served = judged(second, lifted)
        assert app_value(kube, upstream) is None  # still held
        assert served["gateTrust"]["restored"] == ["gates/incident.yaml"]
        assert served["gateTrust"]["trustedFrom"] == frozen
    finally:
        second.stop()
    assert recorded(kube)["anchors"] == {**anchors, "verified": lifted}

    dropped = push(upstream, keys, None, {"gitgate.yaml": None}, "no more verification, "
                   "unsigned")
    third = Loop(upstream, kube, tmp_path, "third")
    try:
        served: dict = {}

        def passed() -> bool:
            served.update(third.status())
            return (served.get("signature") or {}).get("commit") == dropped and bool(
                served.get("pass"))
        until(passed, 60, "a pass after the unsigned head")
        assert app_value(kube, upstream) is None
        assert served["signature"]["trusted"] is False
        assert served["signature"]["inForce"] == lifted  # carol's commit, gates put back
        assert served["gateTrust"]["restored"] == ["gates/incident.yaml"]
    finally:
        third.stop()
    assert recorded(kube)["anchors"] == {**anchors, "verified": lifted}


def ci_repo(tmp_path: Path, keys: Keys, config: str, files: dict[str, str]):
    """A repo on main with `config` as gitgate.yaml and a freeze on `app`, committed unsigned
    (the keys it names sign what follows)."""
    root = tmp_path / "repo"
    repo = gitpython.Repo.init(root, initial_branch="main")
    set_identity(repo, "Dev", "dev@example.com")
    for rel, text in {"gitgate.yaml": config + PLACED, "app/cm.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: ci}\n"),
            "gates/freeze.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: "
                                 "{name: freeze}\nspec: {bundles: [app], reason: INC-1}\n",
            **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo.git.add("-A")
    keys.commit(root, None, "base")
    return root, repo


def lift(root: Path, repo, keys: Keys, who: str, branch: str) -> str:
    repo.git.checkout("main")
    repo.git.checkout("-b", branch)
    (root / "gates/freeze.yaml").unlink()
    repo.git.add("-A")
    keys.commit(root, who, f"lift, signed by {who}")
    return repo.head.commit.hexsha


def commit_case(result: subprocess.CompletedProcess) -> dict:
    [case] = [c for c in json.loads(result.stdout)["cases"] if c["class"] == "commit"]
    return case


def test_a_user_id_whose_comment_holds_a_gate_signers_address_is_not_that_signer(
        tmp_path, keys):
    """gates.signers names alice@example.com; mallory's OpenPGP key (an allowed key) has the
    user id `Mallory (<alice@example.com>) <mallory@example.com>`: her lift fails
    `check --since main`; alice's own key's lift passes."""
    keys.gpg_key("mallory", "Mallory (<alice@example.com>) <mallory@example.com>")
    keys.gpg_key("alice-pgp", "Alice <alice@example.com>")
    root, repo = ci_repo(tmp_path, keys, "verify:\n  commits: false\n  allowedGpgKeys: "
                         ".gitgate/keys.asc\ngates:\n  signers: [alice@example.com]\n",
                         {".gitgate/keys.asc": keys.export("mallory", "alice-pgp")})
    forged = lift(root, repo, keys, "mallory", "forged")
    check = gitgate("check", str(root), "--since", "main", "-o", "json")
    assert check.returncode == 1, check.stdout
    [failure] = commit_case(check)["failures"]
    assert failure["type"] == "UntrustedGates"
    assert f"commit {forged[:12]} changed gates/freeze.yaml (is signed by Mallory " \
           "(<alice@example.com>) <mallory@example.com>, who is not one of gates.signers)" \
        in failure["message"]

    lift(root, repo, keys, "alice-pgp", "signed")
    check = gitgate("check", str(root), "--since", "main", "-o", "json")
    assert commit_case(check)["failures"] == [], check.stdout


def test_check_takes_the_gate_signer_flags_of_run(tmp_path, keys):
    """`check --gate-signers F --since main` judges as `run --gate-signers F`: carol's lift
    fails, alice's passes; the flags without --since are refused."""
    root, repo = ci_repo(tmp_path, keys, "", {})
    gates = allowed_signers(tmp_path / "gate_signers", keys.folder, "alice")
    carol = lift(root, repo, keys, "carol", "carol")
    check = gitgate("check", str(root), "--since", "main", "--gate-signers", str(gates),
                    "-o", "json")
    assert check.returncode == 1, check.stdout + check.stderr
    [failure] = commit_case(check)["failures"]
    assert failure["type"] == "UntrustedGates" and f"commit {carol[:12]} changed " \
        "gates/freeze.yaml" in failure["message"]
    lift(root, repo, keys, "alice", "alice")
    check = gitgate("check", str(root), "--since", "main", "--gate-signers", str(gates),
                    "-o", "json")
    assert commit_case(check)["failures"] == [], check.stdout
    alone = gitgate("check", str(root), "--gate-signers", str(gates))
    assert alone.returncode == 2 and "add --since REV" in alone.stderr


def test_an_ssh_key_whose_entry_expired_does_not_sign_a_backdated_commit(tmp_path, keys):
    """alice's allowed-signers entry is valid before 2020 (and another key's after 2030);
    commits dated inside those windows are judged at their date by git, and now by gitgate:
    the clock decides, and the CLI (today) refuses both."""
    key = (keys.folder / "alice.pub").read_text().strip()
    later = (keys.folder / "carol.pub").read_text().strip()
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'alice@example.com valid-before="20200101" {key}\n'
                       f'carol@example.com valid-after="20300101" {later}\n')
    root, repo = ci_repo(tmp_path, keys, "", {})
    keys.commit(root, "alice", "backdated", date="2019-06-01T12:00:00Z")
    backdated = repo.head.commit.hexsha
    keys.commit(root, "carol", "postdated", date="2031-06-01T12:00:00Z")
    postdated = repo.head.commit.hexsha

    def judged_at(commit: str, year: int, month: int):
        at = datetime(year, month, 1, tzinfo=UTC)
        return Trust(allowed, None, tmp_path / f"trust-{year}", clock=lambda: at).check(
            repo, commit)

    assert judged_at(backdated, 2019, 12).principals == ("alice@example.com",)
    expired = judged_at(backdated, 2020, 2)
    assert not expired.trusted and expired.status == "Y"
    assert expired.said().startswith(f"commit {backdated[:12]} is signed by a key whose "
                                     "allowed-signers entry is not valid now")
    assert judged_at(postdated, 2030, 2).trusted
    assert not judged_at(postdated, 2029, 12).trusted

    flags = ["--verify-commits", "--allowed-signers", str(allowed), "-o", "json"]
    for commit in (postdated, backdated):
        repo.git.checkout("-q", commit)
        check = gitgate("check", str(root), *flags)
        assert check.returncode == 1, check.stdout
        [failure] = commit_case(check)["failures"]
        assert failure["type"] == "Unverified" and "allowed-signers entry is not valid now" \
            in failure["message"]


def test_no_gpg_agent_outlives_the_command_that_made_the_keyring(tmp_path, keys):
    """`check --verify-commits --allowed-gpg-keys`: gpg starts an agent for the keyring it
    imports the keys into; the command stops it before it exits."""
    root, repo = ci_repo(tmp_path, keys, "", {})
    keys.commit(root, "bob", "signed by bob")
    keys.close()  # the test's own agent (it signed), so that only gitgate's could be left
    check = gitgate("check", str(root), "--verify-commits", "--allowed-gpg-keys",
                    str(keys.allowed_gpg), "-o", "json")
    assert commit_case(check)["failures"] == [], check.stdout
    assert gpg_daemons_left(os.environ[MARK], timeout=5) == []


def test_a_merge_that_takes_an_unmerged_gate_signer_version_is_decided_by_its_signer(
        tmp_path, keys):
    """alice once lifted the freeze on a branch nobody merged, then signed a stronger gate on
    main. carol's merge of that branch, taking its version (the gate gone), is carol's
    decision: `check --since main` names her merge. The same merge signed by alice passes."""
    root, repo = ci_repo(tmp_path, keys, "", {})
    gates = allowed_signers(tmp_path / "gate_signers", keys.folder, "alice")
    lift(root, repo, keys, "alice", "abandoned")
    repo.git.checkout("main")
    (root / "gates/freeze.yaml").write_text(
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        "spec: {bundles: [app], reason: INC-2}\n")
    repo.git.add("-A")
    keys.commit(root, "alice", "a stronger freeze")

    def merged_by(who: str) -> str:
        repo.git.checkout("-B", f"merged-by-{who}", "main")
        repo.git.merge("--no-ff", "--no-commit", "-s", "ours", "abandoned")
        repo.git.rm("-q", "gates/freeze.yaml")
        keys.commit(root, who, f"merge abandoned, signed by {who}")
        return repo.head.commit.hexsha

    merged = merged_by("carol")
    check = gitgate("check", str(root), "--since", "main", "--gate-signers", str(gates),
                    "-o", "json")
    assert check.returncode == 1, check.stdout + check.stderr
    [failure] = commit_case(check)["failures"]
    assert failure["type"] == "UntrustedGates"
    assert f"commit {merged[:12]} changed gates/freeze.yaml" in failure["message"]

    merged_by("alice")
    check = gitgate("check", str(root), "--since", "main", "--gate-signers", str(gates),
                    "-o", "json")
    assert commit_case(check)["failures"] == [], check.stdout


GATE = "gates/freeze.yaml"


def test_a_merge_whose_first_parent_is_a_stale_branch_decides_against_the_trusted_one(
        tmp_path, keys):
    """carol merges the trusted revision into alice's stale branch and keeps the stale gate:
    her merge is compared with the trusted revision, so it decides, and the gate is put back
    as the trusted revision has it."""
    history = History(tmp_path, keys, "alice")
    old = history.commit("alice", {"app.yaml": "a: 1\n", GATE: "WEAK\n"}, "a weak gate")
    history.commit("alice", {GATE: "WEAKER\n"}, "a PR never merged", branch="stale", start=old)
    trusted = history.commit("alice", {GATE: "STRONG\n"}, "a strong gate", branch="main")
    head = history.merge("carol", "stale", "main", files={"app.yaml": "a: 2\n"})
    report = history.judge(trusted, head)
    assert [(r.commit, r.paths) for r in report.refused] == [(head, (GATE,))]
    assert report.sources == ((trusted, GATE),) and report.restored == (GATE,)


def test_an_octopus_merge_that_takes_a_stale_gate_decides_it(tmp_path, keys):
    """carol's octopus merge of two side branches onto main takes the gate of alice's stale
    one: the merge brings that content in, so the merge decides."""
    history = History(tmp_path, keys, "alice")
    old = history.commit("alice", {"app.yaml": "a: 1\n", GATE: "WEAK\n"}, "a weak gate")
    history.commit("carol", {"app.yaml": "a: 3\n"}, "a feature", branch="feature", start=old)
    history.commit("alice", {GATE: "WEAKER\n"}, "a PR never merged", branch="stale", start=old)
    trusted = history.commit("alice", {GATE: "STRONG\n"}, "a strong gate", branch="main")
    head = history.merge("carol", "main", "feature", "stale",
                         files={"app.yaml": "a: 3\n", GATE: "WEAKER\n"})
    report = history.judge(trusted, head)
    assert [r.commit for r in report.refused] == [head]
    assert report.sources == ((trusted, GATE),)


def test_a_criss_cross_merge_that_keeps_a_stale_gate_decides_it(tmp_path, keys):
    """Two merges of alice's stale branch and a branch of the trusted revision, each way, then
    a merge of both that takes the stale gate: the merge that took it from the stale branch
    and the one that kept it over the other side's change decide (both carol's)."""
    history = History(tmp_path, keys, "alice")
    old = history.commit("alice", {"app.yaml": "a: 1\n", GATE: "WEAK\n"}, "a weak gate")
    history.commit("alice", {GATE: "WEAKER\n"}, "a PR never merged", branch="stale", start=old)
    trusted = history.commit("alice", {GATE: "STRONG\n"}, "a strong gate", branch="main")
    history.commit("carol", {"app.yaml": "a: 2\n"}, "a feature", branch="feature",
                   start=trusted)
    kept = history.merge("carol", "feature", "stale", files={})  # keeps STRONG
    history.git("branch", "-f", "weak-side", "stale")
    took = history.merge("carol", "weak-side", f"{kept}^1",
                         files={"app.yaml": "a: 2\n"})  # stale's WEAKER, the feature's app
    head = history.merge("carol", "weak-side", kept, files={})
    assert history.git("show", f"{head}:{GATE}") == "WEAKER"
    assert len(history.git("merge-base", "--all", took, kept).split()) == 2
    report = history.judge(trusted, head)
    assert {r.commit for r in report.refused} == {head, took}
    assert report.sources == ((trusted, GATE),)


def test_a_gate_deleted_then_brought_back_stale_by_a_merge_is_put_back(tmp_path, keys):
    """carol deletes alice's gate, then merges alice's unmerged branch that once added a weak
    one: both of carol's commits decide it, and the gate goes back to the trusted one."""
    history = History(tmp_path, keys, "alice")
    old = history.commit("alice", {"app.yaml": "a: 1\n"}, "no gate yet")
    history.commit("alice", {GATE: "WEAK\n"}, "a PR never merged", branch="stale", start=old)
    trusted = history.commit("alice", {GATE: "STRONG\n"}, "a strong gate", branch="main")
    deleted = history.commit("carol", {GATE: None}, "lift")
    head = history.merge("carol", "main", "stale", files={GATE: "WEAK\n"})
    report = history.judge(trusted, head)
    assert {r.commit for r in report.refused} == {head, deleted}
    assert report.sources == ((trusted, GATE),) and report.restored == (GATE,)


def test_a_merge_that_keeps_its_branch_gate_over_a_newer_one_decides_it(tmp_path, keys):
    """Since the trusted revision alice proposed a weaker gate (a branch) and then signed a
    stronger one on main; carol merges main into the branch keeping the weaker: the merge
    dropped main's change, so it decides."""
    history = History(tmp_path, keys, "alice")
    trusted = history.commit("alice", {"app.yaml": "a: 1\n", GATE: "STRONG\n"}, "a gate")
    history.commit("alice", {GATE: "WEAK\n"}, "a PR never merged", branch="pr", start=trusted)
    history.commit("alice", {GATE: "STRONGER\n"}, "a stronger gate", branch="main")
    head = history.merge("carol", "pr", "main", files={"app.yaml": "a: 2\n"})
    report = history.judge(trusted, head)
    assert [r.commit for r in report.refused] == [head]


def test_a_merge_that_brings_a_gate_signers_change_in_is_decided_by_its_signer(
        tmp_path, keys):
    """A feature branch that forked before alice's new gate is merged after it: the merge
    keeps alice's gate and decides nothing. alice's gate change merged by carol (a merge
    commit) is carol's decision; merged by alice, hers."""
    history = History(tmp_path, keys, "alice")
    trusted = history.commit("alice", {"app.yaml": "a: 1\n", GATE: "STRONG\n"}, "a gate")
    history.commit("carol", {"app.yaml": "a: 2\n"}, "a feature", branch="feature",
                   start=trusted)
    history.commit("alice", {GATE: "STRONGER\n"}, "a stronger gate", branch="main")
    head = history.merge("carol", "main", "feature", files={"app.yaml": "a: 2\n"})
    assert history.judge(trusted, head).refused == ()

    history.commit("alice", {GATE: "WEAK\n"}, "alice's PR", branch="gate-pr", start=trusted)
    by_carol = history.merge("carol", "main", "gate-pr", files={GATE: "WEAK\n"})
    assert [r.commit for r in history.judge(trusted, by_carol).refused] == [by_carol]
    history.git("checkout", "-q", "-B", "main", "main~1")
    by_alice = history.merge("alice", "main", "gate-pr", files={GATE: "WEAK\n"})
    assert history.judge(trusted, by_alice).refused == ()


@pytest.mark.parametrize(("config", "frozen"), [
    ("", "gates/frühjahr.yaml"),
    ("", "teams/zürich/PAUSE"),
    ("gatesPath: sperren-ü\n", "sperren-ü/freeze.yaml"),
])
def test_a_freeze_file_named_outside_ascii_is_judged(tmp_path, keys, config, frozen):
    """git quotes such names in its path lists; read unquoted, carol's removal is refused."""
    history = History(tmp_path, keys, "alice")
    trusted = history.commit("alice", {"gitgate.yaml": config or None, "app.yaml": "a: 1\n",
                                       frozen: "STRONG\n"}, "a freeze")
    head = history.commit("carol", {frozen: None}, "lift")
    report = history.judge(trusted, head)
    assert [(r.commit, r.paths) for r in report.refused] == [(head, (frozen,))]
    assert report.restored == (frozen,)
