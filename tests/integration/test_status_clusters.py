"""Per-cluster status from Karmada's bindings, `status -o table|wide|json` and `apply --wait`,
over real HTTP against the emulator, whose bindings carry what Karmada's controllers write
(tests/kubeapi/dispatch.py): members run no controllers, so a Deployment stays Unhealthy until
the test reports it healthy, as on the harness."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from datetime import timedelta

import git
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.cli import main
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings, next_wake
from gitgate.source.git import GitSource
from tests.conftest import write_files
from tests.support.looping import T0, Clock, served_status
from tests.support.manifests import cm, deployment
from tests.support.schemas import validate
from tests.support.webrepo import NS, PLACEMENT, app, web_repo

pytestmark = pytest.mark.integration
SUSPEND_M2 = """\
apiVersion: gitgate.io/v1alpha1
kind: Gate
metadata: {name: move}
spec: {bundles: [web], action: suspend, reason: blue/green, clusters: [member2]}
"""


@pytest.fixture
def setup(tmp_path, emulator):
    return web_repo(tmp_path, emulator)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def clusters_of(capsys, flags, bundle="web") -> dict[str, dict]:
    code, out, _ = run(capsys, "status", *flags, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    validate(doc, "Status")
    found = next(b for b in doc["bundles"] if b["name"] == bundle)
    return {c["name"]: c for c in found["clusters"]}


def healthy(emulator, cluster: str) -> None:
    emulator.state.report(NS, "Deployment", "web", cluster, health="Healthy")


def _healthy_once_reported(emulator, cluster: str):
    """A fault that changes nothing but, at the second read of the bindings after the pass
    wrote the Deployment (the wait has reported the first), makes `cluster` report it
    Healthy: the wait sees Unhealthy, then Healthy, whatever the machine's speed."""
    reads: list[str] = []

    def on(request) -> None:
        if request.method in ("POST", "PATCH", "PUT") and "/deployments" in request.path:
            reads.clear()
        elif request.method == "GET" and "resourcebindings" in request.path:
            reads.append(request.path)
            if len(reads) == 2:
                healthy(emulator, cluster)

    return on


def test_status_shows_each_cluster_from_the_bindings(setup, emulator, capsys):
    root, flags = setup
    assert run(capsys, "apply", str(root), *flags)[0] == 0
    clusters = clusters_of(capsys, flags)
    assert set(clusters) == {"member1", "member2"}
    for state in clusters.values():
        assert (state["scheduled"], state["applied"], state["health"], state["suspended"],
                state["version"]) == (True, True, "Unhealthy", False, "current")
        assert state["message"].startswith("Deployment.apps shop/web is Unhealthy on member")

    healthy(emulator, "member1")
    clusters = clusters_of(capsys, flags)
    assert clusters["member1"]["health"] == "Healthy" and clusters["member1"]["message"] == ""
    assert clusters["member2"]["health"] == "Unhealthy"
    _, table, _ = run(capsys, "status", *flags)
    row = next(line for line in table.splitlines() if line.startswith("web "))
    assert "member1 ✓  member2 ✗" in row and "Unhealthy" in row
    ns_row = next(line for line in table.splitlines() if line.startswith("ns "))
    assert ns_row.split()[2:4] == ["all", "members"]  # Karmada sends Namespaces itself
    shown = {b["name"]: b for b in json.loads(run(capsys, "status", *flags, "-o", "json")[1])[
        "bundles"]}
    assert (shown["ns"]["allMembers"], shown["web"]["allMembers"]) == (True, False)

    # member2 suspended, a new image: member1 gets it, member2 stays behind
    write_files(root, {"gates/move.yaml": SUSPEND_M2, "web/app.yaml": app("web:2")})
    assert run(capsys, "apply", str(root), *flags)[0] == 0
    clusters = clusters_of(capsys, flags)
    assert (clusters["member2"]["suspended"], clusters["member2"]["version"]) == (True, "behind")
    assert (clusters["member1"]["suspended"], clusters["member1"]["version"],
            clusters["member1"]["health"]) == (False, "current", "Unhealthy")
    _, wide, _ = run(capsys, "status", *flags, "-o", "wide")
    rows = [line.split() for line in wide.splitlines() if line.startswith("web ")]
    assert [r[2:8] for r in rows] == [
        ["member1", "yes", "yes", "Unhealthy", "no", "current"],
        ["member2", "yes", "yes", "Unhealthy", "yes", "behind"]]
    _, table, _ = run(capsys, "status", *flags)
    assert "member2 ⏸ behind" in table


def test_a_member_refusing_an_object_is_named(setup, emulator, capsys):
    root, flags = setup
    assert run(capsys, "apply", str(root), *flags)[0] == 0
    emulator.state.report(NS, "ConfigMap", "web-config", "member2", applied=False,
                          message='admission webhook "deny.example" denied the request')
    state = clusters_of(capsys, flags)["member2"]
    assert (state["applied"], state["health"]) == (False, "Unhealthy")  # the worst object
    assert state["message"] == ('ConfigMap shop/web-config on member2: admission webhook '
                                '"deny.example" denied the request')
    _, table, _ = run(capsys, "status", *flags)
    assert "member2 ✗" in table


def test_status_reads_lists_only_whatever_the_number_of_objects(tmp_path, emulator, capsys):
    counts = []
    for size in (1, 20):
        root = write_files(tmp_path / "repo", {  # one repo (one instance is one repo's)
            "gitgate.yaml": PLACEMENT, "web/bundle.yaml": "name: web\n",
            "ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
            "web/app.yaml": app("web:1", configmaps=size)})
        flags = ["--kubeconfig", str(emulator.write_kubeconfig(tmp_path / "kc"))]
        assert run(capsys, "apply", str(root), *flags)[0] == 0
        before = len(emulator.state.requests)
        assert run(capsys, "status", *flags)[0] == 0
        reads = emulator.state.requests[before:]
        assert all(r.method == "GET" for r in reads)
        counts.append(len([r for r in reads if "/namespaces/" in r.path or "bindings" in r.path
                           or "configmaps" in r.path or "deployments" in r.path]))
    # inventories, bindings of the namespace, ConfigMaps, Deployments: the same 4 lists, and
    # the two records the loop keeps beside them (provenance, and the shards of `run --shard`)
    assert counts == [6, 6]


def test_apply_wait_exits_0_once_every_open_cluster_is_healthy(setup, emulator, capsys):
    root, flags = setup
    write_files(root, {"gates/move.yaml": SUSPEND_M2})
    emulator.state.faults.append(_healthy_once_reported(emulator, "member1"))
    code, out, err = run(capsys, "apply", str(root), *flags, "--wait", "--timeout", "30s",
                         "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    validate(doc, "ApplyResult")
    assert doc["wait"] == {"ready": True, "seconds": doc["wait"]["seconds"], "error": "",
                           "pending": []}
    assert "web on member1: Unhealthy, current" in err  # progress, then the change
    assert "web on member1: Healthy, current" in err
    assert "web on member2: suspended, not applied" in err  # reported, not waited for
    assert "all 2 bundles ready" in err


def test_apply_wait_times_out_naming_bundle_cluster_and_object(setup, emulator, capsys):
    root, flags = setup
    code, out, err = run(capsys, "apply", str(root), *flags, "--wait", "--timeout", "3s")
    assert code == 1
    assert re.search(r"not ready after \d+s:", err)
    assert "web on member1: Deployment.apps shop/web is Unhealthy on member1" in err
    assert "web on member2: Deployment.apps shop/web is Unhealthy on member2" in err
    assert "revision" in out  # the pass table is printed before the wait


def test_apply_wait_refuses_a_dry_run(setup, capsys):
    root, flags = setup
    code, _, err = run(capsys, "apply", str(root), *flags, "--wait", "--dry-run")
    assert code == 2 and "--wait needs a real apply" in err


def metric(loop: Reconciler, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(loop.metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return None


def commit_all(root, message: str) -> None:
    """Commit the repo folder as it stands (a Git repository from the first commit on)."""
    repo = git.Repo.init(root, initial_branch="main")
    repo.git.add("-A")
    repo.git.commit("-m", message, "--author", "t <t@t>", env={
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def status_loop(root, flags, tools, tmp_path) -> tuple[Reconciler, Clock, LoopSettings]:
    """A loop following the repo's `main` on the emulator, with an injected clock: a pass
    every 5 minutes, a read of all of Karmada every 30 s."""
    clock = Clock(T0)
    settings = LoopSettings(interval=timedelta(minutes=5), resync=timedelta(hours=24),
                            status_interval=timedelta(seconds=30),
                            apply=ApplyOptions(now=T0))
    loop = Reconciler(GitSource(str(root), "main", tmp_path / "cache"),
                      KubeCluster(load_client(flags[1])), tools, settings, clock=clock)
    return loop, clock, settings


def test_the_loop_reads_karmada_after_a_pass_and_every_status_interval(setup, emulator,
                                                                      tools, tmp_path):
    root, flags = setup
    write_files(root, {"gates/move.yaml": SUSPEND_M2})
    commit_all(root, "web")
    loop, clock, settings = status_loop(root, flags, tools, tmp_path)
    assert loop.tick() == "revision"
    assert loop.observer.status_due(clock())
    loop.observer.refresh_status()
    assert not loop.observer.status_due(clock())
    doc = json.loads(json.dumps(served_status(loop)))
    validate(doc, "LoopStatus")
    web = next(b for b in doc["bundles"] if b["name"] == "web")
    assert [(c["name"], c["health"], c["suspended"]) for c in web["clusters"]] == [
        ("member1", "Unhealthy", False), ("member2", "Unknown", True)]
    assert metric(loop, "gitgate_bundle_cluster_health", bundle="web", cluster="member1",
                  health="Unhealthy") == 1
    assert metric(loop, "gitgate_bundle_cluster_health", bundle="web", cluster="member1",
                  health="Healthy") == 0
    assert metric(loop, "gitgate_bundle_cluster_suspended", bundle="web",
                  cluster="member2") == 1
    assert metric(loop, "gitgate_bundle_cluster_behind", bundle="web", cluster="member1") == 0

    # no pass is due, but the status is read again after the status interval
    healthy(emulator, "member1")
    assert next_wake(loop.state, clock(), settings.interval,
                     settings.status_interval) == T0 + timedelta(seconds=30)
    clock.advance(seconds=30)
    assert loop.tick() is None and loop.observer.status_due(clock())
    loop.observer.refresh_status()
    assert metric(loop, "gitgate_bundle_cluster_health", bundle="web", cluster="member1",
                  health="Healthy") == 1


def test_status_watch_prints_again_when_karmada_reports_a_change(setup, emulator, capsys):
    root, flags = setup
    assert run(capsys, "apply", str(root), *flags)[0] == 0
    watch = subprocess.Popen([sys.executable, "-m", "gitgate.cli", "status", "--watch",
                              "-o", "json", *flags], stdout=subprocess.PIPE, text=True)

    def next_document() -> dict:
        lines = []
        for line in watch.stdout:
            lines.append(line)
            if line == "}\n":
                return json.loads("".join(lines))
        raise AssertionError("status --watch ended")

    try:
        first = next_document()
        web = next(b for b in first["bundles"] if b["name"] == "web")
        assert web["health"] == "Unhealthy"
        healthy(emulator, "member1")
        healthy(emulator, "member2")
        second = next_document()
        web = next(b for b in second["bundles"] if b["name"] == "web")
        assert web["health"] == "Healthy"
        assert watch.poll() is None  # still watching
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(timeout=20)
    assert watch.returncode == 0


def test_status_shows_the_live_revision_and_what_each_cluster_runs(setup, emulator):
    """Issue 28, item 3: a held bundle's new commit showed as its revision with ✓✓ Healthy,
    though the members ran the old one. status shows the applied revision (lastApplied) and
    the attempted one, and per cluster the revision it runs. The real CLI, in subprocesses."""
    from tests.conftest import committed_repo
    from tests.support.hostile import gitgate

    root, flags = setup
    repo = committed_repo(root)
    first = repo.head.commit.hexsha

    def commit(files: dict[str, str]) -> str:
        write_files(root, files)
        repo.git.add("-A")
        repo.git.commit("-m", "change")
        return repo.head.commit.hexsha

    def status() -> tuple[dict, str]:
        shown = gitgate("status", *flags, "-o", "json")
        assert shown.returncode == 0, shown.stderr
        doc = json.loads(shown.stdout)
        validate(doc, "Status")
        table = gitgate("status", *flags).stdout
        return (next(b for b in doc["bundles"] if b["name"] == "web"),
                next(line for line in table.splitlines() if line.startswith("web ")))

    assert gitgate("apply", str(root), *flags).returncode == 0
    for cluster in ("member1", "member2"):
        healthy(emulator, cluster)
    held = commit({"gates/hold.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                   "metadata: {name: hold}\nspec: {bundles: [web], reason: INC-1}\n",
                   "web/app.yaml": app("web:7.2")})
    assert gitgate("apply", str(root), *flags).returncode == 0
    web, row = status()
    assert (web["lastAppliedRevision"], web["lastAttemptedRevision"], web["pending"]) == \
        (first, held, True)
    assert f"{first[:12]} (tried {held[:7]})" in row
    assert {c["revision"] for c in web["clusters"]} == {first}

    lifted = commit({"gates/hold.yaml": SUSPEND_M2})  # now member2 only is suspended
    assert gitgate("apply", str(root), *flags).returncode == 0
    web, row = status()
    assert (web["lastAppliedRevision"], web["pending"]) == (lifted, False)
    runs = {c["name"]: c["revision"] for c in web["clusters"]}
    assert runs == {"member1": lifted, "member2": first}
    assert f"member2 ⏸ behind @{first[:7]}" in row and row.count("@") == 1  # member1: live
    wide = gitgate("status", *flags, "-o", "wide").stdout
    rows = {line.split()[2]: line.split() for line in wide.splitlines()
            if line.startswith("web ")}
    assert rows["member1"][8] == lifted[:12] and rows["member2"][8] == first[:12]
    assert rows["member2"][9] == lifted[:12]  # ATTEMPTED

    (root / "gates/hold.yaml").unlink()
    released = commit({})
    assert gitgate("apply", str(root), *flags).returncode == 0
    web, row = status()
    assert {c["revision"] for c in web["clusters"]} == {released}


def test_after_a_pass_the_loop_reads_again_what_it_changed_and_what_had_not_settled(
        setup, emulator, tools, tmp_path):
    """Between reads of all (every status interval), a pass is followed by a read of the
    bundles it changed and of those Karmada had not settled; the others keep what was last
    read, until the next read of all."""
    root, flags = setup
    write_files(root, {"blog/bundle.yaml": "name: blog\n",
                       "blog/app.yaml": cm("blog-config", "blog") + deployment("blog", "blog"),
                       "blog/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: blog}\n"})
    commit_all(root, "web and blog")
    loop, clock, _ = status_loop(root, flags, tools, tmp_path)

    def health(bundle: str) -> list[str]:
        assert loop.state.observation is not None and not loop.state.observation.error
        return [str(c.health) for c in loop.state.observation.bundles[bundle].clusters]

    def deployments_listed(namespace: str) -> int:
        return sum(1 for r in emulator.state.requests[before:] if r.method == "GET"
                   and r.path == f"/apis/apps/v1/namespaces/{namespace}/deployments")

    assert loop.tick() == "revision"
    loop.observer.observe_after(True)  # the first read is of all
    for cluster in ("member1", "member2"):
        healthy(emulator, cluster)
        emulator.state.report("blog", "Deployment", "blog", cluster, health="Healthy")
    clock.advance(seconds=30)
    assert loop.tick() is None
    loop.observer.observe_after(False)  # the status interval's read of all: both settled
    assert health("web") == health("blog") == ["Healthy", "Healthy"]

    # web changes; blog turns unhealthy on member2, unseen until the next read of all
    emulator.state.report("blog", "Deployment", "blog", "member2", health="Unhealthy")
    write_files(root, {"web/app.yaml": app("web:2")})
    commit_all(root, "web:2")
    clock.advance(seconds=10)
    before = len(emulator.state.requests)
    assert loop.tick() == "revision"
    assert loop.state.last_result is not None
    assert loop.state.last_result.changed() == {"web"}
    before = len(emulator.state.requests)
    loop.observer.observe_after(True)
    assert deployments_listed("shop") == 1 and deployments_listed("blog") == 0
    assert health("blog") == ["Healthy", "Healthy"]  # kept from the last read of all
    assert health("web") == ["Unhealthy", "Unhealthy"]  # web:2 runs nowhere healthy yet

    # web has not settled: the next pass reads it again, though that pass changes nothing
    clock.advance(seconds=10)
    loop.state.requested = True
    assert loop.tick() is not None
    assert loop.state.last_result is not None and loop.state.last_result.changed() == set()
    before = len(emulator.state.requests)
    loop.observer.observe_after(True)
    assert deployments_listed("shop") == 1 and deployments_listed("blog") == 0

    # the status interval is up: all is read again, and blog's trouble is seen
    clock.advance(seconds=10)
    before = len(emulator.state.requests)
    loop.observer.observe_after(True)
    assert deployments_listed("shop") == 1 and deployments_listed("blog") == 1
    assert health("blog") == ["Healthy", "Unhealthy"]
