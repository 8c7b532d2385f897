"""Write-ahead: before a bundle's first write, its inventory records every object the pass
may create, so a fault at any later request leaves no live object that no inventory
records."""

from __future__ import annotations

from dataclasses import replace

from gitgate.apiserver.fanout import fan_out
from gitgate.apiserver.ports import ClusterPort
from gitgate.apply.inventory import PENDING_MESSAGE, Entry, Inventory, entry_for
from gitgate.apply.work import ApplyOptions, BundleWork, RecordStore
from gitgate.errors import GitgateError, Reason
from gitgate.model import Manifest, ObjectRef, Verdict


def record_intent(work: dict[str, BundleWork], staged: dict[str, dict[int, list[Manifest]]],
                   cluster: ClusterPort, options: ApplyOptions, ledger: RecordStore,
                   revision: str) -> None:
    """Write-ahead: before a bundle's first write, its inventory lists every object the pass
    may create, so a fault at any later request (even the final inventory write) leaves no
    live object that no inventory records. A bundle whose intent cannot be recorded writes
    nothing. A new bundle's record already names the pass's `revision` as attempted and the
    digest Git asks for, so its Bundle's spec is written once, not again with the final
    record; it is one request, the Bundle's creation with the intent in it
    (`Ledger.write_ahead`)."""
    intents: list[tuple[BundleWork, Inventory, dict[ObjectRef, Entry]]] = []
    for name, unit in work.items():
        if name not in staged or unit.result.failed:
            continue
        known = unit.previous.by_ref() if unit.previous else {}
        hashed = (unit.hashed(o) for objects in staged[name].values() for o in objects)
        # no hash yet: a write that fails leaves the entry different from Git, so the next
        # pass sends the object again instead of taking it for written
        new = {h.ref: replace(entry_for(h), hash="") for h in hashed if h.ref not in known}
        if not new:
            continue
        base = unit.previous or Inventory(
            bundle=name, verdict=str(Verdict.PENDING), message=PENDING_MESSAGE,
            instance=options.instance, revision=revision,
            digest=unit.plan.verdict.digest if unit.plan else "",
            source=unit.plan.bundle.source.path if unit.plan else "",
            labels=tuple(sorted(unit.plan.bundle.labels.items())) if unit.plan else ())
        intents.append((unit, replace(base, entries=tuple(sorted(
            [*known.values(), *new.values()], key=lambda e: e.ref))), new))
    if not intents:
        return
    try:
        ledger.ensure_home(cluster)
        answers: list[object] = fan_out(lambda job: ledger.write_ahead(cluster, job[1]),
                                        intents, options.concurrency)
    except GitgateError as exc:
        answers = [exc] * len(intents)
    for (unit, _, new), answer in zip(intents, answers, strict=True):
        if isinstance(answer, GitgateError):
            unit.result.fail(Reason.INVENTORY_FAILED,
                             f"cannot record the bundle's objects before writing them "
                             f"({answer.message}); nothing of it was written")
        else:
            unit.entries.update(new)  # recorded: kept until a later pass prunes them
