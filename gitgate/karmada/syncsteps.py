"""A bundle with hooks syncs in steps, as Argo CD runs a sync: PreSync hooks by wave, then the
templates (and Sync hooks) by wave, then PostSync hooks by wave. A step is written once the
one before it is done: a hook done when it ran to completion on every cluster it was
dispatched to, a template when Karmada reports it ready there. A hook that fails, or a step
not done within the hook timeout, stops the sync where it is: later steps are not written, the
templates they hold keep their old version, and SyncFail hooks are written.

Hooks are written once per digest of the bundle (never again by a resync) and tracked in the
inventory; the run of an older digest is deleted when a new one starts (a hook with a fixed
name is deleted one pass before it is written again), and a hook whose delete policy says so
is deleted once it succeeded (`HookSucceeded`) or failed (`HookFailed`).

Pure: (the bundle's steps, previous state, what the inventory holds, progress per object,
gate, now) -> the next state and which objects this pass writes and keeps. Times explicit."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from gitgate.karmada.policy import is_policy
from gitgate.model import Manifest, ObjectRef
from gitgate.model.hookmarks import (
    PHASE_ORDER,
    DeletePolicy,
    Hook,
    Phase,
    Skipped,
    hook_of,
    wave_of,
)
from gitgate.timespec import rfc3339

POLL = timedelta(seconds=5)
# written from the first step on: a hook needs its namespace, its CRD, its policy to exist
_PREREQUISITES = {("", "Namespace"), ("apiextensions.k8s.io", "CustomResourceDefinition")}


@dataclass(frozen=True)
class SyncStep:
    phase: Phase
    wave: int
    hooks: tuple[ObjectRef, ...] = ()
    templates: tuple[ObjectRef, ...] = ()

    def text(self) -> str:
        what = [*(f"hook {r}" for r in self.hooks), *(str(r) for r in self.templates)]
        shown = ", ".join(what[:3]) + (f" (and {len(what) - 3} more)" if len(what) > 3 else "")
        return f"{self.phase} wave {self.wave} [{shown}]"


@dataclass(frozen=True)
class SyncPlan:
    """A bundle's hooks and steps; `steps` is empty for a bundle without hooks."""

    steps: tuple[SyncStep, ...] = ()
    hooks: Mapping[ObjectRef, Hook] = field(default_factory=dict)
    always: tuple[ObjectRef, ...] = ()  # namespaces, CRDs and policies: from the first step
    on_fail: tuple[ObjectRef, ...] = ()  # SyncFail hooks

    @property
    def has_hooks(self) -> bool:
        return bool(self.hooks)


def sync_plan(objects: Iterable[Manifest]) -> SyncPlan:
    """The steps of a bundle's objects (already checked by bundling: no unreadable hook)."""
    hooks: dict[ObjectRef, Hook] = {}
    templates: dict[int, list[ObjectRef]] = {}
    always: list[ObjectRef] = []
    for obj in objects:
        ref = ObjectRef.of(obj)
        hook = hook_of(obj)
        if isinstance(hook, Hook):
            hooks[ref] = hook
        elif isinstance(hook, Skipped):
            continue
        elif is_policy(obj) or (ref.group, ref.kind) in _PREREQUISITES:
            always.append(ref)
        else:
            templates.setdefault(wave_of(obj), []).append(ref)
    if not hooks:
        return SyncPlan()
    keys = {(h.phase, h.wave) for h in hooks.values() if h.phase is not Phase.SYNC_FAIL}
    keys |= {(Phase.SYNC, wave) for wave in templates}
    steps = tuple(SyncStep(phase, wave,
                           tuple(sorted(r for r, h in hooks.items()
                                        if (h.phase, h.wave) == (phase, wave))),
                           tuple(sorted(templates.get(wave, []))) if phase is Phase.SYNC
                           else ())
                  for phase, wave in sorted(keys, key=lambda k: (PHASE_ORDER.index(k[0]),
                                                                 k[1])))
    fail = tuple(sorted(r for r, h in hooks.items() if h.phase is Phase.SYNC_FAIL))
    return SyncPlan(steps, hooks, tuple(sorted(always)), fail)


@dataclass(frozen=True)
class Progress:
    """How far one object got on the clusters it was dispatched to."""

    done: bool = False
    failed: str = ""  # why it failed (a hook's Job failed somewhere)
    waiting: str = ""  # what it waits for


def ref_key(ref: ObjectRef) -> str:
    return "|".join((ref.group, ref.kind, ref.namespace, ref.name))


def ref_of(key: str) -> ObjectRef | None:
    parts = key.split("|")
    return ObjectRef(*parts) if len(parts) == 4 else None


@dataclass(frozen=True)
class HookState:
    """Where a bundle's sync is; kept in its inventory (survives restarts)."""

    digest: str
    step: int  # index of the step being waited for; len(steps) once done
    started: datetime  # when that step was written
    failed: str = ""
    hooks: tuple[str, ...] = ()  # the run's hooks (ref_key), deleted when a new run starts
    cleaning: bool = False  # deleting an earlier run's hooks that have the same names

    def to_json(self) -> str:
        return json.dumps({"digest": self.digest, "step": self.step,
                           "started": rfc3339(self.started), "failed": self.failed,
                           "hooks": list(self.hooks), "cleaning": self.cleaning},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HookState | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(str(data["digest"]), int(data["step"]),
                       datetime.fromisoformat(str(data["started"]).replace("Z", "+00:00")),
                       str(data.get("failed") or ""),
                       tuple(str(k) for k in data.get("hooks") or ()),
                       bool(data.get("cleaning")))
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: the sync starts again from its first step


@dataclass(frozen=True)
class HookStep:
    """What this pass does for the bundle."""

    state: HookState
    write: frozenset[ObjectRef]  # the bundle's objects this pass sends (when changed)
    keep: frozenset[ObjectRef]  # inventory entries neither sent nor pruned
    waiting_for: str
    next_check: datetime | None = None

    @property
    def failed(self) -> str:
        return self.state.failed

    def done(self, steps: int) -> bool:
        return self.state.step >= steps and not self.state.failed


def _deleted(ref: ObjectRef, hook: Hook, progress: Mapping[ObjectRef, Progress]) -> bool:
    seen = progress.get(ref)
    if seen is None:
        return False
    return (DeletePolicy.HOOK_SUCCEEDED in hook.delete and seen.done and not seen.failed) or (
        DeletePolicy.HOOK_FAILED in hook.delete and bool(seen.failed))


def _objects(plan: SyncPlan, state: HookState, present: frozenset[ObjectRef],
             progress: Mapping[ObjectRef, Progress], old: frozenset[ObjectRef]
             ) -> tuple[frozenset[ObjectRef], frozenset[ObjectRef]]:
    """(write, keep) for the state's step."""
    write: set[ObjectRef] = set(plan.always)
    keep: set[ObjectRef] = set()
    mine = set(plan.always)
    now_at = min(state.step, len(plan.steps))
    renewing = {r for r in plan.hooks if r in present} if state.cleaning else set()
    for index, step in enumerate(plan.steps):
        mine.update(step.hooks, step.templates)
        if index <= now_at or now_at == len(plan.steps):
            write.update(step.templates)
        else:
            keep.update(r for r in step.templates if r in present)
        for ref in step.hooks:
            if ref in renewing:
                continue
            if ref in present:
                if not _deleted(ref, plan.hooks[ref], progress):
                    keep.add(ref)
            elif index == now_at and not state.failed and not state.cleaning:
                write.add(ref)
    for ref in plan.on_fail:
        mine.add(ref)
        if ref in present:
            if not _deleted(ref, plan.hooks[ref], progress):
                keep.add(ref)
        elif state.failed:
            write.add(ref)
    if now_at < len(plan.steps) or state.failed:
        keep.update(r for r in present if r not in mine and r not in old)
    return frozenset(write), frozenset(keep)


def _label(plan: SyncPlan, index: int) -> str:
    return f"step {index + 1} of {len(plan.steps)}: {plan.steps[index].text()}"


def _check(plan: SyncPlan, index: int, progress: Mapping[ObjectRef, Progress]
           ) -> tuple[bool, str, str]:
    """(done, failed, waiting) for a step."""
    step = plan.steps[index]
    for ref in (*step.hooks, *step.templates):
        seen = progress.get(ref) or Progress(waiting=f"{ref}: Karmada reports nothing yet")
        if seen.failed:
            return False, f"{'hook ' if ref in plan.hooks else ''}{seen.failed}", ""
        if not seen.done:
            return False, "", seen.waiting or f"{ref} is not done yet"
    return True, "", ""


def hook_step(plan: SyncPlan, previous: HookState | None, applied_digest: str, digest: str,
              present: frozenset[ObjectRef], progress: Mapping[ObjectRef, Progress],
              now: datetime, timeout: timedelta, *, gated: bool = False) -> HookStep:
    """One pass of the sync of `digest`. `applied_digest`: what the inventory says was last
    written (a bundle that gains hooks with unchanged content runs none); `present`: the
    objects the inventory holds; `progress`: per object, what Karmada reports; `gated`: a
    gate holds or suspends the bundle (the step's clock restarts when it lifts)."""
    steps = len(plan.steps)
    mine = {ref_key(r) for r in plan.hooks}
    if previous is None and applied_digest == digest and digest:
        previous = HookState(digest, steps, now, hooks=tuple(sorted(mine)))
    old: frozenset[ObjectRef] = frozenset()
    if previous is None or previous.digest != digest:
        if previous is not None:
            old = frozenset(r for k in previous.hooks if k not in mine
                            for r in [ref_of(k)] if r is not None)
        renewing = any(r in present for r in plan.hooks)
        previous = HookState(digest, 0, now, hooks=tuple(sorted(mine)), cleaning=renewing)
    state = previous

    def out(state: HookState, waiting: str, next_check: datetime | None = None) -> HookStep:
        write, keep = _objects(plan, state, present, progress, old)
        return HookStep(state, write, keep, waiting, next_check)

    if state.failed:
        return out(state, f"failed: {state.failed}")
    if gated:
        return out(replace(state, started=now), "stopped by a gate")
    if state.cleaning:
        if state.started == now:
            return out(state, "deleting the previous run's hooks before they run again",
                       now + POLL)
        state = replace(state, cleaning=False, started=now)
    while state.step < steps:
        label = _label(plan, state.step)
        last = state.step == steps - 1
        if state.started == now:  # written in this pass: what Karmada reports predates it
            if last and not plan.steps[state.step].hooks:
                return out(replace(state, step=steps), "synced")
            return out(state, f"{label}: written, waiting for it", now + POLL)
        done, failed, waiting = _check(plan, state.step, progress)
        if failed:
            return out(replace(state, failed=f"{label}: {failed}"), f"failed: {failed}")
        if done:
            state = HookState(digest, state.step + 1, now, hooks=state.hooks)
            continue
        deadline = state.started + timeout
        if now >= deadline:
            why = (f"{label}: not done within the hook timeout "
                   f"{int(timeout.total_seconds())}s: {waiting}")
            return out(replace(state, failed=why), f"failed: {why}")
        return out(state, f"{label}: waiting for {waiting}", min(deadline, now + POLL))
    return out(state, "synced")
