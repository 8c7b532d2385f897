"""Who may change a freeze (issue 27, item 4): the loop over a real Git remote, with SSH keys
made here. alice is a gate signer; carol may sign deploys but not lift freezes. A gate carol
removes, weakens or moves away keeps holding; a gate she adds holds; a PAUSE file she deletes
keeps pausing; alice's signed removal lifts the freeze."""

from __future__ import annotations

import logging

import pytest

from gitgate.source.gateguard import GateGuard
from gitgate.source.signatures import Trust
from tests.support.looping import T0, Clock, Upstream, reconciler, served_status
from tests.support.schemas import validate
from tests.support.signing import NEEDED, Keys, allowed_signers
from tests.support.signing import push_signed as push

pytestmark = [pytest.mark.integration, NEEDED]


@pytest.fixture
def keys(tmp_path):
    made = Keys(tmp_path, ("alice", "carol"))
    yield made
    made.close()


def guarded_loop(upstream, kube, tools, tmp_path, keys, clock):
    """The loop, with alice as the one gate signer."""
    loop = reconciler(upstream, kube, tools, tmp_path, clock)
    gate_signers = allowed_signers(tmp_path / "gate_signers", keys.folder, "alice")
    loop.source.guard = GateGuard(Trust(gate_signers, None, tmp_path / "g"))
    loop.tick()
    return loop


def verdict(loop, upstream) -> str:
    return {b.bundle: b.verdict for b in loop.state.last_result.bundles}[f"{upstream.run}-app"]


def test_only_a_gate_signer_lifts_a_freeze(tmp_path, kube, tools, keys, caplog):
    upstream = Upstream(tmp_path, kube)
    incident = upstream.gate("incident", f'{{bundles: ["{upstream.run}-app"], reason: INC-1}}')
    push(upstream, keys, "alice", incident, "freeze")
    clock = Clock(T0)
    loop = guarded_loop(upstream, kube, tools, tmp_path, keys, clock)
    assert verdict(loop, upstream) == "held"

    def tick() -> list[str]:
        clock.advance(seconds=60)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="gitgate"):
            loop.tick()
        return [r.getMessage() for r in caplog.records if "gates from" in r.getMessage()]

    # carol removes the gate and changes the app: the gate keeps holding
    push(upstream, keys, "carol", {"gates/incident.yaml": None,
                                   "app/cm.yaml": upstream.configmap("two")}, "lift it")
    said = tick()
    assert verdict(loop, upstream) == "held"
    assert len(said) == 1 and "gates/incident.yaml" in said[0]
    assert "without a gate signer's signature" in said[0]
    served = served_status(loop)
    validate(served, "LoopStatus")
    assert served["gateTrust"]["restored"] == ["gates/incident.yaml"]
    assert "gitgate_gates_trusted 0.0" in loop.metrics.exposition().decode()

    # carol weakens it instead (another bundle) and moves the gates folder: still held
    push(upstream, keys, "carol", {
        "gates/incident.yaml": upstream.gate("incident", '{bundles: ["nothing"], reason: x}')[
            "gates/incident.yaml"],
        "gitgate.yaml": "gatesPath: elsewhere\n"}, "weaken it")
    tick()
    assert verdict(loop, upstream) == "held"

    # a gate carol adds is honoured: holding more is safe
    push(upstream, keys, "carol", upstream.gate("extra", '{bundles: ["*-ns"], reason: mine}'),
         "add one")
    tick()
    assert {b.bundle: b.verdict for b in loop.state.last_result.bundles}[
        f"{upstream.run}-ns"] == "held"

    # alice puts the folder back as it was and removes both gates, signed: lifted
    push(upstream, keys, "alice", {"gates/incident.yaml": None, "gates/extra.yaml": None,
                                   "gitgate.yaml": None}, "lift, signed")
    assert tick() == []
    assert verdict(loop, upstream) == "apply"
    assert "gitgate_gates_trusted 1.0" in loop.metrics.exposition().decode()


def test_a_pause_file_carol_deletes_keeps_pausing(tmp_path, kube, tools, keys):
    upstream = Upstream(tmp_path, kube)
    push(upstream, keys, "alice", {"app/PAUSE": "INC-2: hands off\n"}, "pause the app")
    clock = Clock(T0)
    loop = guarded_loop(upstream, kube, tools, tmp_path, keys, clock)
    assert verdict(loop, upstream) == "held"
    push(upstream, keys, "carol", {"app/PAUSE": None}, "unpause")
    clock.advance(seconds=60)
    loop.tick()
    assert verdict(loop, upstream) == "held"
    assert (upstream.root / "app/PAUSE").exists() is False  # her clone; the loop's differs
    assert (loop.source.cache_dir / "app/PAUSE").read_text() == "INC-2: hands off\n"
