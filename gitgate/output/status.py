"""`status`, `apply` and the loop's `/status`: what gitgate did, as JSON documents and text
tables (like `flux get kustomizations`). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gitgate.apply.engine import PassResult
from gitgate.apply.inventory import Inventory
from gitgate.loop import Reconciler
from gitgate.output.documents import document
from gitgate.output.tables import one_line, parse_stamp, rfc3339, table
from gitgate.timespec import age


def status_document(inventories: list[Inventory]) -> dict[str, Any]:
    return document("Status", {"bundles": [{
        "name": inv.bundle, "verdict": inv.verdict, "revision": inv.revision,
        "digest": inv.digest, "gates": [r.get("gate") for r in inv.reasons],
        "reasons": list(inv.reasons), "since": inv.since or None,
        "lastApplied": inv.last_applied or None,
        "message": inv.message, "objects": len(inv.entries),
    } for inv in sorted(inventories, key=lambda i: i.bundle)]})


def status_table(inventories: list[Inventory], now: datetime, *, wide: bool = False) -> str:
    """AGE: since the verdict last changed; APPLIED: since gitgate last wrote the bundle."""
    head = ["BUNDLE", "VERDICT", "REVISION", "GATES", "AGE", "APPLIED", "OBJECTS", "MESSAGE"]
    rows = [head + (["SINCE", "LAST APPLIED"] if wide else [])]
    for inv in sorted(inventories, key=lambda i: i.bundle):
        gates = ",".join(dict.fromkeys(str(r.get("gate")) for r in inv.reasons)) or "-"
        since, applied = parse_stamp(inv.since), parse_stamp(inv.last_applied)
        row = [inv.bundle, inv.verdict, inv.revision[:12] or "-", gates, age(since, now),
               age(applied, now), str(len(inv.entries)),
               (" ".join(inv.message.split()) if wide else one_line(inv.message)) or "-"]
        if wide:
            row += [inv.since or "-", inv.last_applied or "-"]
        rows.append(row)
    return table(rows) + "\n"


def pass_document(result: PassResult) -> dict[str, Any]:
    return document("ApplyResult", {
            "revision": result.revision, "ok": result.ok, "pruneBlocked": result.prune_blocked,
            "bundles": [{
                "name": b.bundle, "verdict": b.verdict, "reason": b.reason, "message": b.message,
                "failed": b.failed, "applied": [str(r) for r in b.applied],
                "unchanged": b.unchanged, "pruned": [str(r) for r in b.pruned],
                "kept": [str(r) for r in b.kept], "changes": b.changes.summary(),
                "pruneFailed": [str(r) for r in b.prune_failed]} for b in result.bundles]})


def pass_table(result: PassResult) -> str:
    rows = [["BUNDLE", "VERDICT", "APPLIED", "UNCHANGED", "PRUNED", "REASON", "MESSAGE"]]
    for b in result.bundles:
        rows.append([b.bundle, "failed" if b.failed else b.verdict, str(len(b.applied)),
                     str(b.unchanged), str(len(b.pruned)), b.reason or "-",
                     one_line(b.message) or "-"])
    head = f"revision {result.revision}: " + ("ok" if result.ok else "FAILED")
    if result.prune_blocked:
        head += " (PruneBlocked: nothing was deleted)"
    return head + "\n" + table(rows) + "\n"


def loop_document(reconciler: Reconciler) -> dict[str, Any]:
    """The loop's `/status`: where it is, and what its last pass did."""
    state = reconciler.state
    doc: dict[str, Any] = document("LoopStatus", {
        "ready": state.ready, "leading": state.leading, "passes": state.passes,
        "gitReachable": state.git_reachable, "apiReachable": state.api_reachable,
        "revision": state.revision,
        "lastPass": rfc3339(state.last_pass), "lastReason": state.last_reason,
        "lastError": state.last_error, "nextTransition": rfc3339(state.next_transition),
        "repo": reconciler.source.display_url, "branch": reconciler.source.branch})
    if state.last_result is not None:
        doc["pass"] = pass_document(state.last_result)
    return doc
