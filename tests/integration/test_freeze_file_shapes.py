"""A freeze file holds whatever shape a commit gives it: a `PAUSE` that is a folder, a link
to a folder or a link that leads nowhere pauses its folder, and with gate signers a `PAUSE`
that someone else turned into a folder or a link is put back as the gate signer left it (the
loop neither lifts the pause nor stops)."""

from __future__ import annotations

import os
import shutil

import pytest

from gitgate.source.gateguard import GateGuard
from gitgate.source.signatures import Trust
from tests.support.looping import T0, Clock, Upstream, reconciler
from tests.support.signing import NEEDED, Keys, allowed_signers
from tests.support.signing import push_signed as push

pytestmark = [pytest.mark.integration, NEEDED]

SHAPES = ["folder", "folder-link", "dangling-link", "file-link", "linked-parent"]


def reshape(path, shape: str) -> None:
    """Replace the file at `path` by `shape`, in a work tree (`linked-parent`: its folder
    by a link to another folder)."""
    if shape == "linked-parent":
        shutil.rmtree(path.parent)
        os.symlink("ns", path.parent)
        return
    if path.exists() or path.is_symlink():
        path.unlink()
    if shape == "folder":
        path.mkdir()
        (path / "note.txt").write_text("not a pause any more\n")
    elif shape == "folder-link":
        os.symlink("../ns", path)
    elif shape == "dangling-link":
        os.symlink("nothing-here", path)
    else:
        os.symlink("cm.yaml", path)


@pytest.fixture
def keys(tmp_path):
    made = Keys(tmp_path, ("alice", "carol"))
    yield made
    made.close()


def verdicts(loop) -> dict[str, str]:
    return {b.bundle: b.verdict for b in loop.state.last_result.bundles}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_pause_file_carol_reshapes_keeps_pausing(tmp_path, kube, tools, keys, shape):
    upstream = Upstream(tmp_path, kube)
    push(upstream, keys, "alice", {}, "start")
    clock = Clock(T0)
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    loop.source.guard = GateGuard(Trust(allowed_signers(tmp_path / "gate_signers",
                                                        keys.folder, "alice"),
                                        None, tmp_path / "g"))
    loop.tick()
    push(upstream, keys, "alice", {"app/PAUSE": "INC-7: hands off\n"}, "pause the app")
    clock.advance(seconds=60)
    loop.state.requested = True
    loop.tick()
    app = f"{upstream.run}-app"
    assert verdicts(loop)[app] == "held"
    reshape(upstream.root / "app/PAUSE", shape)
    changed = {} if shape == "linked-parent" else {"app/cm.yaml": upstream.configmap("two")}
    push(upstream, keys, "carol", changed, "unpause")
    clock.advance(seconds=60)
    loop.state.requested = True
    loop.tick()
    assert loop.state.last_result.revision == upstream.work.head.commit.hexsha
    assert verdicts(loop).get(app, "held") == "held", loop.state.last_result
    assert kube.cluster.get("v1", "ConfigMap", upstream.ns, "settings")["data"]["value"] == "one"
    restored = loop.source.cache_dir / "app/PAUSE"
    assert not restored.is_symlink() and restored.read_text() == "INC-7: hands off\n"


@pytest.mark.parametrize("shape", ["folder", "folder-link"])
def test_a_gate_file_carol_reshapes_keeps_holding(tmp_path, kube, tools, keys, shape):
    """The same for a gate file: carol turns `gates/incident.yaml` into a folder holding a
    gate that holds nothing (or a link to one): alice's gate is put back and holds."""
    upstream = Upstream(tmp_path, kube)
    app = f"{upstream.run}-app"
    push(upstream, keys, "alice", upstream.gate("incident", f"{{bundles: [{app}], reason: INC}}"),
         "freeze")
    clock = Clock(T0)
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    loop.source.guard = GateGuard(Trust(allowed_signers(tmp_path / "gate_signers",
                                                        keys.folder, "alice"),
                                        None, tmp_path / "g"))
    loop.tick()
    assert verdicts(loop)[app] == "held"
    gate = upstream.root / "gates/incident.yaml"
    gate.unlink()
    nothing = upstream.gate("nothing", "{bundles: [none], reason: x}")["gates/nothing.yaml"]
    if shape == "folder":
        gate.mkdir()
        (gate / "nothing.yaml").write_text(nothing)
    else:
        (upstream.root / "other").mkdir()
        (upstream.root / "other/nothing.txt").write_text(nothing)
        os.symlink("../other", gate)
    push(upstream, keys, "carol", {"app/cm.yaml": upstream.configmap("two")}, "lift")
    clock.advance(seconds=60)
    loop.state.requested = True
    loop.tick()
    assert loop.state.last_result.revision == upstream.work.head.commit.hexsha
    assert verdicts(loop)[app] == "held", loop.state.last_result
    restored = loop.source.cache_dir / "gates/incident.yaml"
    assert restored.is_file() and not restored.is_symlink()


@pytest.mark.parametrize("name", ["pause", "Pause", "PAUSE.txt", "pause.md", "PAUSE "])
def test_a_pause_file_spelled_carelessly_still_pauses(tmp_path, kube, capsys, name):
    """An on-call person's `touch apps/web/pause` in an incident: the folder is paused as by
    `PAUSE`, and the reason names the file as written."""
    import json

    from gitgate.cli import main
    from tests.conftest import write_files
    from tests.support.manifests import cm

    ns = kube.ns("spell")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [member1]}}}\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/web/app.yaml": cm("web", ns, "v1"),
        "apps/web/pause.yaml": cm("pause", ns, "v1"),  # a manifest named pause: no pause
    })
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id, "-o", "json"]
    assert main(["apply", str(root), *flags]) == 0
    write_files(root, {f"apps/web/{name}": "INC-9: hands off\n",
                       "apps/web/app.yaml": cm("web", ns, "v2")})
    capsys.readouterr()
    main(["apply", str(root), *flags])
    web = {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}["apps-web"]
    assert web["verdict"] == "held", web
    assert kube.cluster.get("v1", "ConfigMap", ns, "web")["data"]["value"] == "v1"
