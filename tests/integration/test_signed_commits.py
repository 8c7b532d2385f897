"""Only signed commits are applied (issue 27, item 3): the loop over a real Git remote, with
SSH and OpenPGP keys made here by the real `ssh-keygen` and `gpg`, and git's own
verification. An unsigned head, or one signed by a key that is not allowed, leaves the last
verified revision in force, and the log, the metric and /status say which commit and which
key."""

from __future__ import annotations

import json
import logging
import subprocess
import tempfile
from pathlib import Path

import pytest

from gitgate.errors import ConfigError
from gitgate.source.signatures import Trust
from tests.conftest import write_files
from tests.support.looping import T0, Clock, Upstream, reconciler, served_status
from tests.support.schemas import validate
from tests.support.signing import NEEDED, Keys

pytestmark = [pytest.mark.integration, NEEDED]


@pytest.fixture
def keys(tmp_path):
    made = Keys(tmp_path)
    yield made
    made.close()


def commit(upstream: Upstream, keys: Keys, who: str | None, value: str) -> str:
    write_files(upstream.root, {"app/cm.yaml": upstream.configmap(value)})
    upstream.work.git.add("-A")
    keys.commit(upstream.root, who, value)
    upstream.work.git.push("origin", "main", "--force")
    return upstream.work.head.commit.hexsha


def live(kube, upstream) -> str | None:
    found = kube.cluster.get("v1", "ConfigMap", upstream.ns, "settings")
    return found["data"]["value"] if found else None


def verifying_loop(upstream, kube, tools, tmp_path, keys, clock):
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    loop.source.trust = Trust(keys.allowed_ssh, keys.allowed_gpg, tmp_path / "trust")
    return loop


def test_only_a_head_an_allowed_key_signed_is_applied(tmp_path, kube, tools, keys, caplog):
    upstream = Upstream(tmp_path, kube)
    first = commit(upstream, keys, "alice", "alice-1")
    clock = Clock(T0)
    loop = verifying_loop(upstream, kube, tools, tmp_path, keys, clock)
    assert loop.tick() == "revision" and live(kube, upstream) == "alice-1"
    assert loop.state.revision == first

    for who, words in ((None, "is not signed"),
                       ("mallory", "which is not an allowed signer")):
        head = commit(upstream, keys, who, f"{who}-2")
        clock.advance(seconds=60)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="gitgate"):
            loop.tick()
        assert live(kube, upstream) == "alice-1" and loop.state.revision == first
        said = [r.getMessage() for r in caplog.records if "not applied" in r.getMessage()]
        assert len(said) == 1 and said[0].startswith(f"not applied: commit {head[:12]} ")
        assert words in said[0] and said[0].endswith(f"; {first[:12]} stays in force")
        served = served_status(loop)
        validate(served, "LoopStatus")
        assert served["signature"]["commit"] == head and not served["signature"]["trusted"]
        assert served["signature"]["inForce"] == first
        assert "gitgate_git_head_verified 0.0" in loop.metrics.exposition().decode()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="gitgate"):
            loop.tick()  # the same head again: said once, not at every fetch
        assert not [r for r in caplog.records if "not applied" in r.getMessage()]

    signed = commit(upstream, keys, "bob", "bob-3")  # OpenPGP, allowed
    clock.advance(seconds=60)
    assert loop.tick() == "revision"
    assert live(kube, upstream) == "bob-3" and loop.state.revision == signed
    assert "gitgate_git_head_verified 1.0" in loop.metrics.exposition().decode()
    assert json.dumps(served_status(loop)["signature"]["trusted"]) == "true"


def test_a_loop_whose_branch_was_never_signed_applies_nothing(tmp_path, kube, tools, keys):
    upstream = Upstream(tmp_path, kube)  # its first commit is not signed
    loop = verifying_loop(upstream, kube, tools, tmp_path, keys, Clock(T0))
    assert loop.tick() is None
    assert live(kube, upstream) is None and loop.state.revision is None
    assert "no earlier commit of main was verified" in loop.state.last_error


def test_the_signers_are_checked_at_startup():
    with pytest.raises(ConfigError, match="needs --allowed-signers"):
        Trust(None, None, Path(tempfile.mkdtemp()))
    with pytest.raises(ConfigError, match="no such file"):
        Trust(Path("/nonexistent/allowed"), None, Path(tempfile.mkdtemp()))


def test_run_refuses_signers_without_verification_and_verification_without_signers(tmp_path):
    from tests.support.hostile import gitgate

    base = ["run", "--repo", f"file://{tmp_path}/none.git", "--kubeconfig",
            str(tmp_path / "absent")]
    lone = gitgate(*base, "--allowed-signers", str(tmp_path / "x"))
    assert lone.returncode == 2 and "take effect with --verify-commits" in lone.stderr
    empty = gitgate(*base, "--verify-commits")
    assert empty.returncode == 2 and "needs --allowed-signers" in empty.stderr


def test_pause_signs_when_git_is_told_to_and_says_whether_it_did(tmp_path, keys):
    from tests.conftest import committed_repo, set_identity
    from tests.support.hostile import gitgate

    root = write_files(tmp_path / "repo", {"apps/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap"
                                           "\nmetadata: {name: web, namespace: w}\n"})
    repo = committed_repo(root)
    set_identity(repo, "Alice", "alice@example.com")
    plain = gitgate("pause", "apps-web", "--reason", "INC-1", "--repo", str(root))
    assert "not signed (git's commit.gpgsign is off)" in plain.stdout
    with repo.config_writer() as config:
        config.set_value("commit", "gpgsign", "true")
        config.set_value("gpg", "format", "ssh")
        config.set_value("user", "signingkey", str(keys.folder / "alice"))
    signed = gitgate("resume", "apps-web", "--repo", str(root))
    assert signed.returncode == 0, signed.stderr
    assert signed.stdout.rstrip().endswith(", signed")
    trust = Trust(keys.allowed_ssh, None, tmp_path / "trust")
    assert trust.check(repo, repo.head.commit.hexsha).trusted  # a verifying loop applies it
    assert not trust.check(repo, repo.head.commit.parents[0].hexsha).trusted


def test_check_and_plan_in_ci_verify_the_commit_under_test(tmp_path, keys):
    from tests.conftest import set_identity
    from tests.support.hostile import gitgate

    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "apps/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, "
                            "namespace: w}\n"})
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    import git as gitpython

    repo = gitpython.Repo(root)
    set_identity(repo, "Alice", "alice@example.com")
    repo.git.add("-A")
    subprocess.run(["git", *keys.signing("alice"), "commit", "-q", "-S", "-m", "signed"],
                   cwd=root, check=True)
    flags = ["--verify-commits", "--allowed-signers", str(keys.allowed_ssh)]
    check = gitgate("check", str(root), *flags, "-o", "json")
    assert check.returncode == 0, check.stdout
    [case] = [c for c in json.loads(check.stdout)["cases"] if c["class"] == "commit"]
    assert case["failures"] == []
    assert gitgate("plan", str(root), *flags).returncode == 0

    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "unsigned"], cwd=root,
                   check=True)
    check = gitgate("check", str(root), *flags, "-o", "json")
    assert check.returncode == 1
    [case] = [c for c in json.loads(check.stdout)["cases"] if c["class"] == "commit"]
    assert case["failures"][0]["type"] == "Unverified"
    assert "is not signed" in case["failures"][0]["message"]
    plan = gitgate("plan", str(root), *flags)
    assert plan.returncode == 1 and "warning: commit " in plan.stderr
