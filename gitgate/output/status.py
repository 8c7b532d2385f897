"""`status`, `apply` and the loop's `/status`: what gitgate did, as JSON documents and text
tables (like `flux get kustomizations`). Pure."""

from __future__ import annotations

from typing import Any

from gitgate.apply.engine import PassResult
from gitgate.apply.inventory import Inventory
from gitgate.loop import Reconciler
from gitgate.output.tables import one_line, rfc3339, table


def status_document(inventories: list[Inventory]) -> dict[str, Any]:
    return {"bundles": [{
        "name": inv.bundle, "verdict": inv.verdict, "revision": inv.revision,
        "digest": inv.digest, "gates": [r.get("gate") for r in inv.reasons],
        "reasons": list(inv.reasons), "since": inv.since, "lastApplied": inv.last_applied,
        "message": inv.message, "objects": len(inv.entries),
    } for inv in sorted(inventories, key=lambda i: i.bundle)]}


def status_table(inventories: list[Inventory]) -> str:
    rows = [["BUNDLE", "VERDICT", "REVISION", "GATES", "SINCE", "OBJECTS", "MESSAGE"]]
    for inv in sorted(inventories, key=lambda i: i.bundle):
        gates = ",".join(dict.fromkeys(str(r.get("gate")) for r in inv.reasons)) or "-"
        rows.append([inv.bundle, inv.verdict, inv.revision[:12] or "-", gates, inv.since or "-",
                     str(len(inv.entries)), one_line(inv.message)])
    return table(rows) + "\n"


def pass_document(result: PassResult) -> dict[str, Any]:
    return {"revision": result.revision, "ok": result.ok, "pruneBlocked": result.prune_blocked,
            "bundles": [{
                "name": b.bundle, "verdict": b.verdict, "reason": b.reason, "message": b.message,
                "failed": b.failed, "applied": [str(r) for r in b.applied],
                "unchanged": b.unchanged, "pruned": [str(r) for r in b.pruned],
                "kept": [str(r) for r in b.kept], "changes": b.changes.summary(),
                "pruneFailed": [str(r) for r in b.prune_failed]} for b in result.bundles]}


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
    doc: dict[str, Any] = {
        "ready": state.ready, "leading": state.leading, "passes": state.passes,
        "gitReachable": state.git_reachable, "apiReachable": state.api_reachable,
        "revision": state.revision,
        "lastPass": rfc3339(state.last_pass), "lastReason": state.last_reason,
        "lastError": state.last_error, "nextTransition": rfc3339(state.next_transition),
        "repo": reconciler.source.display_url, "branch": reconciler.source.branch}
    if state.last_result is not None:
        doc["pass"] = pass_document(state.last_result)
    return doc
