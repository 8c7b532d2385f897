"""Progressive rollouts across member clusters: a new digest of a bundle reaches one wave of
clusters at a time. Every cluster outside the released waves keeps dispatch suspended (the
suspension is written before the templates, as for a pause), so Karmada holds the old version
there. A wave is released when every released cluster has been ready (scheduled, applied,
current, Healthy) for `bake`; a wave that is not ready by `progressDeadline`, or turns
Unhealthy while baking, halts the rollout (`onFailure: hold`) or is passed over
(`onFailure: continue`). With an analysis (`Analyse`), a baking wave counts as healthy only
while its checks hold on every released cluster too, and a check failed past its limit
fails the wave as turning Unhealthy does.

Pure: (spec, previous state, digest, per-cluster states, gate, now) -> the next state, the
clusters to keep suspended and when to look again. Times are explicit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from gitgate.karmada.dispatch import ClusterState, Health
from gitgate.model.rolloutspec import RolloutSpec, seconds_text
from gitgate.timespec import rfc3339

POLL = timedelta(seconds=5)  # how soon to look again while a wave is on its way


@dataclass(frozen=True)
class RolloutState:
    """Where a bundle's rollout is; kept in its inventory (survives restarts and leader
    changes)."""

    digest: str  # the content being rolled out
    wave: int  # index of the wave being released; == len(waves) once complete
    started: datetime  # when this wave was released (or its gate lifted)
    healthy_since: datetime | None = None  # every released cluster ready since
    halted: str = ""  # why it stopped (empty while it goes on)
    analysis: str = ""  # the wave's analysis so far (`Judged.record`; empty: none yet)
    gated: bool = False  # a gate stopped it at the last pass: the wave goes out once it lifts

    def complete(self, spec: RolloutSpec) -> bool:
        return self.wave >= len(spec.waves)

    def retry_due(self, retry: datetime | None) -> bool:
        """`gitgate resume` asked this halted rollout to try its wave again, after the wave
        started (an older request is spent)."""
        return bool(self.halted) and retry is not None and retry > self.started

    def to_json(self) -> str:
        return json.dumps({"digest": self.digest, "wave": self.wave,
                           "started": rfc3339(self.started),
                           "healthySince": rfc3339(self.healthy_since)
                           if self.healthy_since else None,
                           "halted": self.halted, "analysis": self.analysis,
                           **({"gated": True} if self.gated else {})},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RolloutState | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            healthy = data.get("healthySince")
            return cls(str(data["digest"]), int(data["wave"]), _time(data["started"]),
                       _time(healthy) if healthy else None, str(data.get("halted") or ""),
                       str(data.get("analysis") or ""), data.get("gated") is True)
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: the rollout starts again from wave 1 (the safe side)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Judged:
    """What a wave's analysis says in this pass."""

    record: str  # its measurements so far, kept in the rollout's state (JSON)
    failed: str = ""  # a check failed past its limit: which, where and why
    holding: bool = True  # every check's last measurement passed on every released cluster
    waiting: str = ""  # while not holding: what it waits for
    next_check: datetime | None = None  # when a measurement is next due


# (the record so far, the released clusters, now) -> the judgement; measures what is due
Analyse = Callable[[str, tuple[str, ...], datetime], Judged]


@dataclass(frozen=True)
class Step:
    """What this pass does for the bundle."""

    state: RolloutState
    suspend: tuple[str, ...]  # clusters whose dispatch stays suspended (not yet released)
    waiting_for: str  # a sentence for plan and status
    next_check: datetime | None  # when a pass should look again (None: nothing to wait for)

    @property
    def halted(self) -> bool:
        return bool(self.state.halted)


def _released(spec: RolloutSpec, wave: int) -> set[str]:
    return {c for w in spec.waves[:wave + 1] for c in w.clusters}


def _not_ready(clusters: Mapping[str, ClusterState], names: set[str]) -> list[str]:
    out = []
    for name in sorted(names):
        state = clusters.get(name)
        if state is None:
            out.append(f"{name}: Karmada reports nothing yet")
        elif not state.ready:
            out.append(f"{name}: {state.message or state.summary()}")
    return out


def _reported_since(clusters: Mapping[str, ClusterState], names: set[str]) -> datetime | None:
    """Since when Karmada reports every one of `names` ready (the latest of their ready-since
    times); None when one of them does not say."""
    times = [clusters[n].ready_since if n in clusters else None for n in names]
    known = [t for t in times if t is not None]
    return max(known) if known and len(known) == len(times) else None


def step(spec: RolloutSpec, previous: RolloutState | None, applied_digest: str, digest: str,
         clusters: Mapping[str, ClusterState], now: datetime, *,
         gated: bool = False, known: tuple[str, ...] = (),
         retry: datetime | None = None, analyse: Analyse | None = None,
         nothing_to_judge: bool = False) -> Step:
    """One pass of the rollout of `digest`. `applied_digest` is what the bundle's inventory
    says was last written (a bundle that gains a rollout with unchanged content has nothing
    to roll out); `spec` has its selector waves resolved (`RolloutSpec.resolved`);
    `clusters` what Karmada reports per cluster; `gated`: a hold or suspend
    gate covers the bundle, which stops the rollout where it is (its timers restart when the
    gate lifts); `known`: every member cluster Karmada has (one in no wave is released
    after the last wave); `retry`: when `gitgate resume` last asked a halted rollout to try
    its wave again (a request older than the wave's start is spent); `analyse`: the
    bundle's analysis, asked while the wave bakes healthy; `nothing_to_judge`: the version
    rolled out has nothing Karmada dispatches (a bundle emptied in Git), so a released wave
    has nothing to be ready and only bakes."""
    every = sorted({c for w in spec.waves for c in w.clusters} | set(clusters) | set(known))
    if previous is None and applied_digest == digest and digest:
        previous = RolloutState(digest, len(spec.waves), now)
    fresh = previous is None or previous.digest != digest
    if previous is None or previous.digest != digest:
        previous = RolloutState(digest, 0, now)  # a new digest starts again from wave 1
    state = previous
    if state.complete(spec):
        return Step(state, (), "rolled out", None)
    released = _released(spec, state.wave)
    suspend = tuple(c for c in every if c not in released)
    label = (f"wave {state.wave + 1} of {len(spec.waves)} "
             f"[{spec.waves[state.wave].text()}]")
    if not spec.waves[state.wave].clusters and not gated and not state.halted:
        # a selector that matches no cluster: nothing to release or wait for
        nxt = RolloutState(digest, state.wave + 1, now)
        if nxt.complete(spec):
            return Step(nxt, (), "rolled out", None)
        return step(spec, nxt, applied_digest, digest, clusters, now, known=known,
                    analyse=analyse)
    if state.retry_due(retry):
        state = replace(state, started=now, healthy_since=None, halted="", analysis="")
    if gated:  # a gate takes over a halt too: lifting it continues this wave afresh
        state = replace(state, started=now, healthy_since=None, halted="", analysis="",
                        gated=True)
        return Step(state, suspend, f"{label}: stopped by a gate", None)
    if state.gated:
        # the gate lifted: the wave goes out in this pass (a suspend gate kept it from every
        # cluster), and the time it waited counts against no deadline or bake
        state = replace(state, started=now, gated=False)
        return Step(state, suspend, f"{label}: released, waiting for it to be ready",
                    now + POLL)
    if state.halted:
        return Step(state, suspend, f"halted at {label}: {state.halted}", None)
    if fresh or state.started == now:
        # released in this pass: what Karmada reports predates this pass's writes
        return Step(state, suspend, f"{label}: released, waiting for it to be ready",
                    now + POLL)
    problems = [] if nothing_to_judge else _not_ready(clusters, released)
    judged = None
    if not problems and analyse is not None:
        judged = analyse(state.analysis, tuple(sorted(released)), now)
        state = replace(state, analysis=judged.record)
        if judged.failed:
            return _failed(spec, state, label, f"analysis {judged.failed}", applied_digest,
                           digest, clusters, now, known, analyse)
    if not problems:
        # the bake counts from the earliest moment known: a pass that saw the wave healthy,
        # or when Karmada says it turned ready (never before the wave was released)
        since = state.healthy_since or now
        reported = _reported_since(clusters, released)
        if reported is not None:
            since = min(since, max(reported, state.started))
        state = replace(state, healthy_since=since)
        if judged is not None and not judged.holding:
            return Step(state, suspend, f"{label}: healthy, waiting for its analysis: "
                        f"{judged.waiting}", judged.next_check or now + POLL)
        if now - since >= spec.bake:
            nxt = RolloutState(digest, state.wave + 1, now)
            if nxt.complete(spec):
                return Step(nxt, (), "rolled out", None)
            return step(spec, nxt, applied_digest, digest, clusters, now, known=known,
                        analyse=analyse)
        due = [t for t in (since + spec.bake, judged and judged.next_check) if t]
        return Step(state, suspend, f"{label}: healthy, baking until "
                    f"{rfc3339(since + spec.bake)}", min(due))
    turned = state.healthy_since is not None and any(
        clusters.get(c) is not None and clusters[c].health is Health.UNHEALTHY
        for c in released)
    deadline = state.started + spec.progress_deadline
    if turned or now >= deadline:
        why = (f"turned Unhealthy while baking: {problems[0]}" if turned else
               f"not ready within progressDeadline {seconds_text(spec.progress_deadline)}: "
               f"{problems[0]}")
        return _failed(spec, state, label, why, applied_digest, digest, clusters, now, known,
                       analyse)
    state = replace(state, healthy_since=None)
    return Step(state, suspend, f"{label}: waiting for {problems[0]} (deadline "
                f"{rfc3339(deadline)})", min(deadline, now + POLL))


def _failed(spec: RolloutSpec, state: RolloutState, label: str, why: str,
            applied_digest: str, digest: str, clusters: Mapping[str, ClusterState],
            now: datetime, known: tuple[str, ...], analyse: Analyse | None) -> Step:
    """The wave failed: halted (`onFailure: hold`), or passed over (`continue`)."""
    if spec.on_failure == "continue":
        nxt = RolloutState(digest, state.wave + 1, now)
        if nxt.complete(spec):
            return Step(nxt, (), f"rolled out (passed over a failed wave: {why})", None)
        return step(spec, nxt, applied_digest, digest, clusters, now, known=known,
                    analyse=analyse)
    every = sorted({c for w in spec.waves for c in w.clusters} | set(clusters) | set(known))
    released = _released(spec, state.wave)
    state = replace(state, healthy_since=None, halted=why)
    return Step(state, tuple(c for c in every if c not in released),
                f"halted at {label}: {why}", None)
