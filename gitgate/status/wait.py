"""`apply --wait`: the loop runs until settled, and this says when that is. Fed what the loop
knows after each of its turns (the last plan and result, what Karmada last reported) and the
time, it returns the progress lines to print and, once settled, the outcome: every open
bundle scheduled, applied, current and Healthy on each cluster it is placed on and not
suspended (suspended clusters are reported, not waited for); or a rollout halted; or a
rollout or sync still moving, or a bundle not ready, at the timeout. Pure: the clock is the
caller's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gitgate.apply.work import PassResult
from gitgate.model import Verdict
from gitgate.passes.karmadareads import Observation
from gitgate.plan import BundlePlan, Plan

# held bundles were not written: nothing to wait for
WAITED_VERDICTS = frozenset({str(Verdict.APPLY), str(Verdict.SUSPENDED)})


@dataclass(frozen=True)
class Pending:
    """What one bundle still waits for on one cluster ("" when it is placed nowhere yet)."""

    bundle: str
    cluster: str
    message: str

    def __str__(self) -> str:
        where = f"{self.bundle} on {self.cluster}" if self.cluster else self.bundle
        return f"{where}: {self.message}"


def pending(observation: Observation, bundles: Iterable[str]) -> list[Pending]:
    out = []
    for bundle in bundles:
        dispatch = observation.bundles.get(bundle)
        if dispatch is None or dispatch.propagated == 0:
            continue  # nothing in it is propagated by Karmada (Namespaces only, say)
        if not dispatch.clusters:
            out.append(Pending(bundle, "", dispatch.message or "not scheduled on any cluster"))
            continue
        out += [Pending(bundle, c.name, c.message or c.summary()) for c in dispatch.waiting_on()]
    return out


def states(observation: Observation, bundles: Iterable[str]) -> dict[tuple[str, str], str]:
    """A line per bundle and cluster, to print when it changes."""
    out = {}
    for bundle in bundles:
        dispatch = observation.bundles.get(bundle)
        for state in dispatch.clusters if dispatch else ():
            text = state.summary() + (f" ({state.message})" if state.message else "")
            out[(bundle, state.name)] = text
    return out


@dataclass(frozen=True)
class WaitResult:
    pending: list[Pending]  # empty: everything waited for is ready
    error: str = ""  # Karmada's status could not be read
    seconds: float = 0.0  # spent waiting for Karmada, after the passes
    halted: tuple[str, ...] = ()  # a line per halted rollout
    unfinished: tuple[str, ...] = ()  # a line per rollout or sync still moving at the timeout

    @property
    def ready(self) -> bool:
        return not (self.pending or self.error or self.halted or self.unfinished)

    def document(self) -> dict[str, Any]:
        return {"ready": not self.pending and not self.error,
                "seconds": round(self.seconds, 1), "error": self.error,
                "pending": [{"bundle": p.bundle, "cluster": p.cluster, "message": p.message}
                            for p in self.pending]}


def _checks(item: BundlePlan) -> list[object]:
    """When the bundle's rollout or sync wants a pass again."""
    return [c for c in (item.rollout.next_check if item.rollout else None,
                        item.hooks.next_check if item.hooks else None) if c is not None]


class Settling:
    """Whether the loop run by `apply --wait` has settled, turn by turn."""

    def __init__(self, timeout: float, started: float, *, timeout_text: str = "",
                 summary_every: float = 15.0):
        self.timeout, self.started, self.summary_every = timeout, started, summary_every
        self.timeout_text = timeout_text or f"{timeout:g}s"
        self._steps: dict[str, str] = {}  # what was printed of each rollout and sync
        self._states: dict[tuple[str, str], str] = {}  # ... of each bundle on each cluster
        self._waiting_since: float | None = None
        self._next_summary = 0.0

    def turn(self, plan: Plan | None, result: PassResult | None,
             observation: Observation | None, now: float) -> tuple[list[str], WaitResult | None]:
        """The lines to print for this turn, and the outcome once settled (None: not yet)."""
        out = now - self.started >= self.timeout
        if plan is None or result is None:
            return [], (WaitResult([], "no pass ran within --timeout") if out else None)
        if not result.ok:
            return [], WaitResult([])
        lines = self._moving(plan)
        halted = tuple(f"{b.bundle.name}: rollout {b.rollout.waiting_for}" for b in plan.bundles
                       if b.rollout is not None and b.rollout.halted)
        if halted:
            return lines, WaitResult([], halted=halted)
        if any(_checks(item) for item in plan.bundles):
            if not out:
                return lines, None
            return lines, WaitResult([], unfinished=tuple(
                f"{item.bundle.name}: {what} not finished within --timeout "
                f"{self.timeout_text}: {step.waiting_for}"
                for item in plan.bundles
                for what, step in (("rollout", item.rollout), ("hooks", item.hooks))
                if step is not None and step.next_check is not None))
        waited = sorted(b.bundle for b in result.bundles
                        if not b.failed and b.verdict in WAITED_VERDICTS)
        if self._waiting_since is None:
            self._waiting_since = now
            self._next_summary = now + self.summary_every
            left = max(0.0, self.timeout - (now - self.started))
            lines.append(f"waiting up to {left:g}s for {len(waited)} bundles to be ready in "
                         "Karmada")
        more, outcome = self._ready(observation, waited, now, out)
        return lines + more, outcome

    def _ready(self, observation: Observation | None, waited: list[str], now: float,
               out: bool) -> tuple[list[str], WaitResult | None]:
        assert self._waiting_since is not None
        seconds = now - self._waiting_since
        if observation is None:
            return [], (WaitResult([], "Karmada's status was not read", seconds) if out
                        else None)
        if observation.error:
            return [], WaitResult([], observation.error, seconds)
        lines = []
        for key, text in sorted(states(observation, waited).items()):
            if self._states.get(key) != text:
                lines.append(f"{key[0]} on {key[1]}: {text}")
                self._states[key] = text
        left = pending(observation, waited)
        if not left:
            lines.append(f"all {len(waited)} bundles ready after {seconds:.0f}s")
            return lines, WaitResult([], "", seconds)
        if out:
            lines.append(f"not ready after {seconds:.0f}s:")
            lines += [f"  {item}" for item in left]
            return lines, WaitResult(left, "", seconds)
        if now >= self._next_summary:
            names = sorted({p.bundle for p in left})
            lines.append(f"waiting {seconds:.0f}s: {len(names)} of {len(waited)} bundles not "
                         f"ready ({', '.join(names[:5])}{', …' if len(names) > 5 else ''})")
            self._next_summary = now + self.summary_every
        return lines, None

    def _moving(self, plan: Plan) -> list[str]:
        """Where each rollout and each sync with hooks is, when that changed."""
        lines = []
        for item in plan.bundles:
            for what, step in (("rollout", item.rollout), ("hooks", item.hooks)):
                if step is None:
                    continue
                key = f"{item.bundle.name} {what}"
                if self._steps.get(key) != step.waiting_for:
                    lines.append(f"{item.bundle.name}: {what} {step.waiting_for}")
                    self._steps[key] = step.waiting_for
        return lines
