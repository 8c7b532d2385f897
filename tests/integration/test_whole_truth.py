"""What on-call and CI people see is the whole truth (issue 61, items 1 and 3): one standing
per bundle, said the same by `status` (table, JSON, YAML), `get`, `describe`, the Bundle's
conditions and events, the loop's `/status` and the web page, for a held, halted,
approved-through, suspended-per-cluster, progressing and failed bundle; rollout reasons that
name the file as the repo has it; one event per transition; a loop that does not call a
rollout's look-again a gate transition; a bake a one-shot `apply` can finish; and a "last
change" that blames the commit that changed the content."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from datetime import timedelta
from html import unescape

import git
import pytest
from ruamel.yaml import YAML

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.cli import main
from gitgate.cli.run import page_source
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.output.statusviews import loop_document
from gitgate.output.weblayout import Filters
from gitgate.output.webpages import bundle_page, overview_page
from gitgate.passes.recorded import bundle_events, recorded_status
from gitgate.source.git import GitSource
from gitgate.source.localgit import LocalCheckout
from tests.conftest import REPO_ROOT, committed_repo, set_identity, write_files
from tests.support.looping import T0, Clock
from tests.support.manifests import cm, deployment
from tests.support.records import stored_record
from tests.support.webrepo import NS, PLACEMENT

pytestmark = pytest.mark.integration
WAVES = "rollout: {{waves: [{{clusters: [member1]}}, {{clusters: [member2]}}], bake: {bake}, " \
        "progressDeadline: {deadline}}}\n"


def gate(name: str, spec: str) -> dict[str, str]:
    return {f"gates/{name}.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                                  f"metadata: {{name: {name}}}\nspec: {spec}\n"}


def bundle(folder: str, extra: str = "", objects: str = "") -> dict[str, str]:
    name = folder.replace("/", "-")
    return {f"{folder}/bundle.yaml": f"name: {name}\ndependsOn: [ns]\n{extra}",
            f"{folder}/app.yaml": objects or cm(f"{name}-config", NS)}


def six_bundles(root):
    """held, halted (apps/web, its rollout past its deadline), approved (through a gate that
    still holds), cut (suspended on member2 by a gate), rolling (wave 1 waiting) and broken
    (a render failure)."""
    return write_files(root, {
        "gitgate.yaml": PLACEMENT,
        "ns/bundle.yaml": "name: ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
        **bundle("held"), **bundle("approved"), **bundle("cut"),
        **bundle("apps/web", "# the web shop\n" + WAVES.format(bake="1m", deadline="3s"),
                 cm("web-config", NS) + deployment("web", NS)),
        **bundle("rolling", WAVES.format(bake="1h", deadline="1h"),
                 cm("rolling-config", NS) + deployment("rolling", NS)),
        "broken/bundle.yaml": "name: broken\ndependsOn: [ns]\n",
        "broken/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [broken\n",
        **gate("freeze", "{bundles: [held], reason: INC-7 payments outage}"),
        **gate("review", "{bundles: [approved], reason: CAB review pending}"),
        **gate("cut", "{bundles: [cut], action: suspend, clusters: [member2], "
                      "reason: member2 maintenance}")})


def gitgate(*argv: str, code: int = 0) -> str:
    done = subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == code, done.stderr
    return done.stdout


@pytest.fixture
def settled(tmp_path, emulator, tools):
    """The six bundles after a loop's passes (an injected clock), its `/status` and page."""
    root = six_bundles(tmp_path / "repo")
    committed_repo(root)
    gitgate("approve", "approved", "--repo", str(root))  # a commit: the gate stays
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    clock = Clock(T0)
    loop = Reconciler(LocalCheckout(root), KubeCluster(load_client(kubeconfig)), tools,
                      LoopSettings(interval=timedelta(seconds=1), apply=ApplyOptions(now=T0)),
                      clock=clock)
    loop.tick()
    for _ in range(3):  # apps/web's member1 never gets healthy: past its 3 s deadline
        clock.advance(seconds=2)
        loop.tick()
    loop.observer.refresh_status()
    loop.state.leading = True
    loop.publish()
    return root, kubeconfig, loop


EXPECTED = {  # what each bundle's standing must say, and the command that changes it
    "held": ("held by gate freeze (gates/freeze.yaml): INC-7 payments outage",
             "gitgate resume freeze"),
    "approved": ("approved through gate review (gates/review.yaml); the gate still holds "
                 "anything newer", "gitgate resume review"),
    "cut": ("suspended on member2 by gate cut (gates/cut.yaml): member2 maintenance",
            "gitgate resume cut"),
    "apps-web": ("rollout halted at wave 1 of 2 [member1]: not ready within progressDeadline "
                 "3s", "gitgate resume apps-web --kubeconfig"),
    "rolling": ("rolling out wave 1 of 2 [member1]", ""),
    "broken": ("broken/app.yaml", "fix broken/app.yaml"),
}


def page_cells(html: str) -> dict[str, str]:
    return {name: unescape(re.sub(r"<[^>]+>", "", cell)) for name, cell in re.findall(
        r'<tr data-bundle="([^"]+)">.*?<td class="msg">(.*?)</td></tr>', html, re.S)}


def test_every_output_says_the_same_standing(settled):
    root, kubeconfig, loop = settled
    flags = ["--kubeconfig", kubeconfig]
    status = {b["name"]: b for b in json.loads(gitgate("status", *flags, "-o", "json"))
              ["bundles"]}
    as_yaml = {b["name"]: b for b in YAML(typ="safe").load(
        gitgate("status", *flags, "-o", "yaml"))["bundles"]}
    listed = {b["name"]: b for b in json.loads(gitgate("get", *flags, "-o", "json"))["bundles"]}
    served = {b["name"]: b for b in loop_document(loop.published)["bundles"]}
    table, wide = gitgate("status", *flags), gitgate("status", *flags, "-o", "wide")
    cells = page_cells(overview_page(page_source(loop, 1).snapshot(), Filters()))
    cluster = KubeCluster(load_client(kubeconfig))
    records = {i.bundle: i for i in recorded_status(cluster, "default").inventories}
    plan = {b["name"]: b for b in json.loads(gitgate("plan", str(root), *flags, "-o", "json",
                                                     code=1))["bundles"]}  # broken fails
    assert {n: status[n]["verdict"] for n in EXPECTED} == {
        "held": "held", "approved": "apply", "cut": "suspended", "apps-web": "halted",
        "rolling": "suspended", "broken": "failed"}
    for name, (said, command) in EXPECTED.items():
        message, commands = status[name]["message"], status[name]["next"]
        assert said in message, (name, message)
        assert "Applied" not in message or name == "approved", (name, message)
        assert (command == "" and commands == []) or any(
            c.startswith(command) for c in commands), (name, commands)
        line = message + (f"; next: {'; or '.join(commands)}" if commands else "")
        for other in (as_yaml[name], listed[name], served[name]):
            assert (other["message"], other["next"]) == (message, commands), name
        assert line in wide, (name, line)  # the default table cuts a long message only
        row = next(r for r in table.splitlines() if r.startswith(name + " "))
        assert message[:100] in row and all(c in row for c in commands), (name, row)
        assert cells[name] == line, name
        described = json.loads(gitgate("describe", name, *flags, "-o", "json"))
        assert described["message"] == message
        ready = {c["type"]: c for c in described["conditions"]}["Ready"]
        assert ready["message"] == message, name
        page = bundle_page(page_source(loop, 1).snapshot(), records[name], [])
        assert message in unescape(page) and all(c in unescape(page) for c in commands)
        events = bundle_events(cluster, records[name])
        if name in ("held", "approved", "cut", "apps-web"):
            assert line in [e["note"] for e in events], (name, events)
        assert "Lifted" not in [e["reason"] for e in events], (name, events)
        if name in ("held", "approved", "cut"):  # `plan` (its own clock: the wall's) says
            assert said in plan[name]["message"], (name, plan[name])  # the same words
    approved = {c["type"]: c for c in json.loads(gitgate(
        "describe", "approved", *flags, "-o", "json"))["conditions"]}["Held"]
    assert (approved["status"], approved["reason"]) == ("False", "Approved")
    assert [g["approved"] for g in status["approved"]["gatesInForce"]] == [True]


def test_rollout_reasons_name_the_file_as_the_repo_has_it(settled):
    root, kubeconfig, loop = settled
    flags = ["--kubeconfig", kubeconfig]
    web = next(b for b in json.loads(gitgate("status", *flags, "-o", "json"))["bundles"]
               if b["name"] == "apps-web")
    rollout = next(r for r in web["reasons"] if r["kind"] == "rollout")
    assert (rollout["file"], rollout["line"]) == ("apps/web/bundle.yaml", 4)
    assert "(apps/web/bundle.yaml:4)" in web["message"]
    planned = next(b for b in json.loads(gitgate("plan", str(root), *flags, "-o", "json",
                                                 code=1))["bundles"] if b["name"] == "apps-web")
    assert [r["file"] for r in planned["reasons"] if r["kind"] == "rollout"] == [
        "apps/web/bundle.yaml"]
    notes = " ".join(str(e["note"]) for e in bundle_events(
        KubeCluster(load_client(kubeconfig)), loop.published.inventories["apps-web"]))
    assert "apps/web/bundle.yaml:4" in notes and "apps-web/bundle.yaml" not in notes


def test_a_rollout_says_one_event_per_transition_and_no_gate_transition(
        tmp_path, emulator, tools, caplog):
    """A wave waiting to be ready is looked at every few seconds: no gate is involved, so
    the pass is no `gate-transition`, says nothing at info level when nothing changed, and
    the rollout's start is one event (not a Suspended event per look)."""
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT, "ns/bundle.yaml": "name: ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
        **bundle("rolling", WAVES.format(bake="1h", deadline="1h"),
                 cm("rolling-config", NS) + deployment("rolling", NS))})
    cluster = KubeCluster(load_client(str(emulator.write_kubeconfig(tmp_path / "kc"))))
    clock = Clock(T0)
    loop = Reconciler(LocalCheckout(root), cluster, tools,
                      LoopSettings(apply=ApplyOptions(now=T0)), clock=clock)
    caplog.set_level(logging.DEBUG, logger="gitgate")
    assert loop.tick() == "revision"
    for _ in range(3):
        clock.advance(seconds=5)
        assert loop.tick() == "progress-check"  # rolling's wave, looked at again: no gate
    info = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert not any("gate-transition" in m or "reason=progress-check" in m for m in info), info
    record = stored_record(emulator, "rolling")
    assert [e["reason"] for e in bundle_events(cluster, record)] == ["Applied"]
    assert "rolling out wave 1 of 2 [member1]" in bundle_events(cluster, record)[0]["note"]


ROLLOUT = WAVES.format(bake="2m", deadline="10m")


def test_a_one_shot_apply_after_the_bake_releases_the_next_wave(tmp_path, emulator, capsys):
    """CI applies once per commit: the bake counts from when Karmada says the wave turned
    ready (the condition's lastTransitionTime), so the next apply after the bake releases
    the next wave, though no pass saw the wave healthy before."""
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT, "ns/bundle.yaml": "name: ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
        **bundle("web", ROLLOUT, cm("web-config", NS) + deployment("web", NS))})
    flags = ["--kubeconfig", str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))]

    def apply(clock) -> dict:
        capsys.readouterr()
        assert main(["apply", str(root), *flags, "-o", "json"], clock=clock) == 0
        return next(b for b in json.loads(capsys.readouterr().out)["bundles"]
                    if b["name"] == "web")

    assert apply(Clock(T0))["verdict"] == "suspended"  # wave 1 (member1) released
    ready = T0 + timedelta(seconds=30)
    emulator.state.report(NS, "Deployment", "web", "member1", health="Healthy", status={
        "conditions": [{"type": "Available", "status": "True",
                        "lastTransitionTime": ready.strftime("%Y-%m-%dT%H:%M:%SZ")}]})
    released = apply(Clock(ready + timedelta(minutes=3)))
    assert released["verdict"] == "apply", released  # wave 2 released
    assert '"wave": 1' in stored_record(emulator, "web").progression.rollout  # the 2nd


def test_without_a_reported_time_the_bake_counts_from_the_first_pass_that_saw_it(
        tmp_path, emulator, capsys):
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT, "ns/bundle.yaml": "name: ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
        **bundle("web", ROLLOUT, cm("web-config", NS) + deployment("web", NS))})
    flags = ["--kubeconfig", str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))]
    verdict = []
    for at, healthy in ((T0, False), (T0 + timedelta(minutes=5), True),
                        (T0 + timedelta(minutes=6), True), (T0 + timedelta(minutes=8), True)):
        if healthy:
            emulator.state.report(NS, "Deployment", "web", "member1", health="Healthy")
        capsys.readouterr()
        assert main(["apply", str(root), *flags, "-o", "json"], clock=Clock(at)) == 0
        verdict.append(next(b["verdict"] for b in json.loads(capsys.readouterr().out)
                            ["bundles"] if b["name"] == "web"))
    assert verdict == ["suspended", "suspended", "suspended", "apply"]


def test_last_change_blames_the_commit_that_changed_the_content(tmp_path, emulator, tools):
    """The content change and a pause reach the loop in one fetch: the page's last change
    names the content's commit, not the pause's."""
    bare = git.Repo.init(tmp_path / "upstream.git", bare=True, initial_branch="main")
    work = git.Repo.init(tmp_path / "work", initial_branch="main")
    set_identity(work)
    work.create_remote("origin", bare.working_dir)
    root = tmp_path / "work"

    def commit(files: dict[str, str], message: str) -> str:
        write_files(root, files)
        work.git.add("-A")
        work.git.commit("-m", message)
        work.git.push("origin", "main")
        return work.head.commit.hexsha

    commit({"gitgate.yaml": PLACEMENT, "ns/bundle.yaml": "name: ns\n",
            "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
            **bundle("web", objects=cm("web-config", NS, "1"))}, "initial")
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    loop = Reconciler(GitSource("file://" + bare.working_dir, "main", tmp_path / "cache"),
                      KubeCluster(load_client(kubeconfig)), tools,
                      LoopSettings(apply=ApplyOptions(now=T0)), clock=Clock(T0))
    assert loop.tick() == "revision"
    content = commit(bundle("web", objects=cm("web-config", NS, "2")), "bad value")
    pause = commit(gate("pause-web", "{bundles: [web], reason: INC-8}"), "pause web")
    assert loop.tick() == "revision"
    change = loop.state.overview["changes"]["web"]
    assert change["revision"] == content != pause
    assert change["objects"] == [{"object": "ConfigMap shop/web-config", "action": "changed",
                                  "fields": [".data.value"], "fieldsMore": 0}]
