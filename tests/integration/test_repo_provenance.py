"""Provenance declared in the repo (issue 27, items 3 and 4): `verify:` and `gates.signers` in
gitgate.yaml, with the allowed signers' keys committed next to it. The loop reads them from
the last revision it verified, never from the head it judges, so a commit nobody allowed
cannot switch verification off, add its author's key, or make its author a gate signer.
`gitgate status` shows what the running loop recorded. Real git, real ssh-keygen keys."""

from __future__ import annotations

import json

import pytest

from gitgate.source.gateguard import GateGuard
from gitgate.source.provenance import RepoTrust
from tests.support.hostile import gitgate
from tests.support.looping import T0, Clock, Upstream, reconciler
from tests.support.signing import NEEDED, Keys
from tests.support.signing import push_signed as push

pytestmark = [pytest.mark.integration, NEEDED]

VERIFY = "verify:\n  allowedSigners: .gitgate/allowed_signers\n"


@pytest.fixture
def keys(tmp_path):
    made = Keys(tmp_path, ("alice", "carol"))
    yield made
    made.close()


def signer_line(keys: Keys, name: str, principal: str | None = None) -> str:
    return f"{principal or name + '@example.com'} {(keys.folder / f'{name}.pub').read_text()}"


def repo_loop(upstream, kube, tools, tmp_path, clock):
    """The loop as `gitgate run` wires it without --verify-commits or --gate-signers: the
    trust gitgate.yaml declares."""
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    trusted = RepoTrust(tmp_path / "repo-trust")
    loop.source.repo_trust = trusted
    loop.source.guard = GateGuard(repo_trust=trusted)
    return loop


def live(kube, upstream) -> str | None:
    found = kube.cluster.get("v1", "ConfigMap", upstream.ns, "settings")
    return found["data"]["value"] if found else None


def status(kube) -> tuple[dict, str]:
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    table = gitgate("status", *flags)
    shown = gitgate("status", *flags, "-o", "json")
    return json.loads(shown.stdout).get("provenance") or {}, table.stderr


def test_verification_the_repo_declares_cannot_be_undone_by_an_unsigned_commit(
        tmp_path, kube, tools, keys):
    upstream = Upstream(tmp_path, kube)
    first = push(upstream, keys, "alice", {
        "gitgate.yaml": VERIFY, ".gitgate/allowed_signers": signer_line(keys, "alice"),
        "app/cm.yaml": upstream.configmap("alice-1")}, "verify, signed")
    clock = Clock(T0)
    loop = repo_loop(upstream, kube, tools, tmp_path, clock)
    assert loop.tick() == "revision" and live(kube, upstream) == "alice-1"

    def tick() -> None:
        clock.advance(seconds=60)
        loop.tick()

    # unsigned: drops verify: and changes the app; judged by the verified revision's rules
    dropped = push(upstream, keys, None, {"gitgate.yaml": None,
                                          "app/cm.yaml": upstream.configmap("two")}, "drop")
    tick()
    assert live(kube, upstream) == "alice-1" and loop.state.revision == first
    recorded, said = status(kube)
    assert recorded["signature"]["commit"] == dropped and not recorded["signature"]["trusted"]
    assert f"not applied: commit {dropped[:12]} is not signed; {first[:12]} stays in force" \
        in said

    # carol signs a commit adding her own key: the keys come from the verified revision
    push(upstream, keys, "carol", {
        ".gitgate/allowed_signers": signer_line(keys, "alice") + signer_line(keys, "carol"),
        "gitgate.yaml": VERIFY, "app/cm.yaml": upstream.configmap("carol-3")}, "me too")
    tick()
    assert live(kube, upstream) == "alice-1"

    # alice vouches for the new list; from then on carol's signature counts
    push(upstream, keys, "alice", {}, "carol may sign")
    tick()
    assert live(kube, upstream) == "carol-3"
    push(upstream, keys, "carol", {"app/cm.yaml": upstream.configmap("carol-4")}, "mine")
    tick()
    assert live(kube, upstream) == "carol-4"
    recorded, said = status(kube)
    assert recorded["signature"]["trusted"] and "not applied" not in said

    # a signed commit may switch verification off; then an unsigned head is applied
    push(upstream, keys, "alice", {"gitgate.yaml": None}, "no more verification")
    tick()
    push(upstream, keys, None, {"app/cm.yaml": upstream.configmap("free-6")}, "unsigned")
    tick()
    assert live(kube, upstream) == "free-6"
    assert status(kube)[0] == {}  # nothing is checked: nothing recorded to show


def test_only_the_gate_signers_gitgate_yaml_names_lift_a_freeze(tmp_path, kube, tools, keys):
    """alice and carol may sign deploys (verify.commits is off: only the gates are guarded);
    gates.signers names alice alone."""
    upstream = Upstream(tmp_path, kube)
    config = ("verify:\n  commits: false\n  allowedSigners: .gitgate/allowed_signers\n"
              "gates:\n  signers: [alice@example.com]\n")
    both = signer_line(keys, "alice") + signer_line(keys, "carol")
    freeze = upstream.gate("incident", f'{{bundles: ["{upstream.run}-app"], reason: INC-1}}')
    push(upstream, keys, "alice", {"gitgate.yaml": config, ".gitgate/allowed_signers": both,
                                   **freeze}, "freeze")
    clock = Clock(T0)
    loop = repo_loop(upstream, kube, tools, tmp_path, clock)
    loop.tick()

    def verdict() -> str:
        clock.advance(seconds=60)
        loop.tick()
        return {b.bundle: b.verdict for b in loop.state.last_result.bundles}[
            f"{upstream.run}-app"]

    assert verdict() == "held"
    # carol relabels her key as alice's: the key file is a freeze file too, so the keys in
    # force stay those of the last trusted revision
    push(upstream, keys, "carol", {".gitgate/allowed_signers": signer_line(
        keys, "alice") + signer_line(keys, "carol", "alice@example.com")}, "I am alice")
    assert verdict() == "held"
    lifted = push(upstream, keys, "carol", {"gates/incident.yaml": None}, "lift it")
    assert verdict() == "held"
    recorded, said = status(kube)
    assert recorded["gateTrust"]["restored"] == [".gitgate/allowed_signers", "gates/incident.yaml"]
    assert f"commit {lifted[:12]} changed gates/incident.yaml (is signed by " \
           "carol@example.com, who is not one of gates.signers)" in said
    assert "gates from " in said

    assert any(".gitgate/allowed_signers" in r["paths"] for r in recorded["gateTrust"]["refused"])
    # and naming herself a gate signer is a change of gitgate.yaml, put back the same way
    push(upstream, keys, "carol", {"gitgate.yaml": config.replace(
        "[alice@example.com]", "[alice@example.com, carol@example.com]")}, "me too")
    assert verdict() == "held"

    # alice puts back the key file and gitgate.yaml and the gate, then lifts it, signed
    push(upstream, keys, "alice", {".gitgate/allowed_signers": both, "gitgate.yaml": config,
                                   **freeze}, "restore, signed")
    assert verdict() == "held"
    push(upstream, keys, "alice", {"gates/incident.yaml": None}, "lift, signed")
    assert verdict() == "apply"  # the trusted revision moves on: nothing is refused now
    assert verdict() == "apply"
    recorded, said = status(kube)
    assert recorded["gateTrust"]["refused"] == [] and "gates from" not in said


def test_ci_judges_a_change_by_the_trust_of_the_branch_it_merges_into(tmp_path, keys):
    """`check`/`plan --since main` on a feature branch: verify: and gates.signers come from
    main, so the branch cannot vouch for itself; an unsigned head and a freeze lifted by
    someone who is not a gate signer fail, naming the commit; a clean branch passes."""
    import git as gitpython

    from tests.conftest import set_identity

    root = tmp_path / "repo"
    repo = gitpython.Repo.init(root, initial_branch="main")
    set_identity(repo, "Dev", "dev@example.com")
    upstream = Upstream.__new__(Upstream)  # only its file helpers: no remote, no cluster
    upstream.root, upstream.work, upstream.ns = root, repo, "ci"

    def commit(who: str | None, files: dict[str, str | None], what: str) -> str:
        for rel, text in files.items():
            path = root / rel
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        repo.git.add("-A")
        keys.commit(root, who, what)
        return repo.head.commit.hexsha

    config = (VERIFY + "gates:\n  signers: [alice@example.com]\n"
              "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n")
    commit("alice", {"gitgate.yaml": config, ".gitgate/allowed_signers": signer_line(
        keys, "alice") + signer_line(keys, "carol"),
        "app/cm.yaml": upstream.configmap("one"),
        "gates/freeze.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: "
                             "{name: freeze}\nspec: {bundles: [app], reason: INC-1}\n"}, "base")
    repo.git.checkout("-b", "feature")
    lifted = commit("carol", {"gates/freeze.yaml": None}, "lift the freeze")
    check = gitgate("check", str(root), "--since", "main", "-o", "json")
    assert check.returncode == 1, check.stdout
    [case] = [c for c in json.loads(check.stdout)["cases"] if c["class"] == "commit"]
    [failure] = case["failures"]
    assert failure["type"] == "UntrustedGates"
    assert f"commit {lifted[:12]} changed gates/freeze.yaml (is signed by carol@example.com, " \
           "who is not one of gates.signers)" in failure["message"]
    plan = gitgate("plan", str(root), "--since", "main")
    assert plan.returncode == 1 and "warning: gates from " in plan.stderr

    # the branch drops verify: and adds itself as a gate signer, unsigned: both still fail
    commit(None, {"gitgate.yaml": config.replace("[alice@example.com]",
                                                 "[alice@example.com, dev@example.com]")},
           "trust me")
    failures = {f["type"] for c in json.loads(gitgate(
        "check", str(root), "--since", "main", "-o", "json").stdout)["cases"]
        if c["class"] == "commit" for f in c["failures"]}
    assert failures == {"Unverified", "UntrustedGates"}

    # a branch alice signs, that lifts nothing it may not: passes, and says so
    repo.git.checkout("main")
    repo.git.checkout("-b", "clean")
    commit("alice", {"app/cm.yaml": upstream.configmap("two"), "gates/freeze.yaml": None},
           "lift, signed")
    clean = gitgate("plan", str(root), "--since", "main")
    assert clean.returncode == 0, clean.stderr
    assert "every freeze-file change since main is signed by a gate signer" in clean.stderr
    unknown = gitgate("check", str(root), "--since", "origin/nowhere")
    assert unknown.returncode == 2 and "--since origin/nowhere: no such revision" in \
        unknown.stderr
