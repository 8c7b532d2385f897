"""`apply --wait`: poll what Karmada reports until every open bundle is scheduled, applied,
current and Healthy on every cluster it is placed on and not suspended (suspended clusters
are reported, not waited for), or until the timeout. The clock and sleep are parameters."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gitgate.apply.observe import Observation


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
    pending: list[Pending]  # empty: everything is ready
    error: str = ""  # Karmada's status could not be read
    seconds: float = 0.0


def wait_ready(read: Callable[[], Observation], bundles: list[str], timeout: float, *,
               report: Callable[[str], None], every: float = 2.0, summary_every: float = 15.0,
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> WaitResult:
    """Poll `read` every `every` seconds; `report` gets a line per change of a bundle's
    state on a cluster and a summary every `summary_every` seconds."""
    started = clock()
    shown: dict[tuple[str, str], str] = {}
    next_summary = started + summary_every
    while True:
        observation = read()
        now = clock()
        if observation.error:
            return WaitResult([], observation.error, now - started)
        for (bundle, cluster), text in sorted(states(observation, bundles).items()):
            if shown.get((bundle, cluster)) != text:
                report(f"{bundle} on {cluster}: {text}")
                shown[(bundle, cluster)] = text
        left = pending(observation, bundles)
        if not left or now - started >= timeout:
            return WaitResult(left, "", now - started)
        if now >= next_summary:
            waiting = sorted({p.bundle for p in left})
            report(f"waiting {now - started:.0f}s: {len(waiting)} of {len(bundles)} bundles "
                   f"not ready ({', '.join(waiting[:5])}{', …' if len(waiting) > 5 else ''})")
            next_summary = now + summary_every
        sleep(min(every, max(0.0, started + timeout - now)))
