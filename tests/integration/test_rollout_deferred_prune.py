"""A rollout under way deletes nothing that left Git until its last wave is out; what it
then deletes passes the same checks as any prune. An object that left the rolling bundle
for a paused one is neither deleted nor taken over while the pause stands, whichever wave
the rollout is at. Through the real CLI against the emulator, whose bindings dispatch like
Karmada's controllers."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gitgate.cli import main
from tests.conftest import write_files
from tests.support.looping import T0, Clock
from tests.support.manifests import cm
from tests.support.records import stored_record
from tests.support.webrepo import NS, app, web_repo

pytestmark = pytest.mark.integration
ROLLOUT = "rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 2s}\n"


def apply(capsys, root, flags, clock) -> dict:
    capsys.readouterr()
    main(["apply", str(root), *flags, "-o", "json"], clock=clock)
    return {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}


def healthy(emulator, cluster):
    emulator.state.report(NS, "Deployment", "web", cluster, health="Healthy")


def roll_out(capsys, root, flags, clock, emulator) -> None:
    """Drive web's rollout through both waves."""
    for cluster in ("member1", "member2"):
        apply(capsys, root, flags, clock)
        healthy(emulator, cluster)
        apply(capsys, root, flags, clock)
        clock.advance(seconds=2.2)
    apply(capsys, root, flags, clock)
    assert json.loads(stored_record(emulator, "web").progression.rollout)["wave"] == 2


def extra(emulator):
    return emulator.state.object("", "configmaps", NS, "extra-0")


def test_a_deferred_delete_of_what_a_paused_bundle_claims_now_never_comes(
        tmp_path, emulator, capsys):
    root, flags = web_repo(tmp_path, emulator, ROLLOUT)
    write_files(root, {"web/app.yaml": app("web:1", configmaps=2),
                       "h/bundle.yaml": "name: h\ndependsOn: [ns]\n",
                       "h/app.yaml": cm("h", NS)})
    clock = Clock(T0, tick=timedelta(seconds=1))
    roll_out(capsys, root, flags, clock, emulator)
    assert extra(emulator)["data"]["value"] == "v1"
    write_files(root, {"h/PAUSE": "incident\n", "web/app.yaml": app("web:2"),
                       "h/app.yaml": cm("h", NS) + cm("extra-0", NS, "v2")})
    roll_out(capsys, root, flags, clock, emulator)
    deletes = [r.path for r in emulator.state.requests
               if r.method == "DELETE" and r.path.endswith("/configmaps/extra-0")]
    assert deletes == []
    assert extra(emulator)["data"]["value"] == "v1"
    (root / "h/PAUSE").unlink()
    assert apply(capsys, root, flags, clock)["h"]["verdict"] == "apply"
    assert extra(emulator)["data"]["value"] == "v2"
