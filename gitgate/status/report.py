"""`gitgate status`: the inventories as a table or JSON, like `flux get kustomizations`. Pure."""

from __future__ import annotations

import json
from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.report import table


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
                     str(len(inv.entries)), inv.message.replace("\n", " ")[:120]])
    return table(rows) + "\n"


def pass_document(result) -> dict[str, Any]:
    return {"revision": result.revision, "ok": result.ok, "pruneBlocked": result.prune_blocked,
            "bundles": [{
                "name": b.bundle, "verdict": b.verdict, "reason": b.reason, "message": b.message,
                "failed": b.failed, "applied": [str(r) for r in b.applied],
                "unchanged": b.unchanged, "pruned": [str(r) for r in b.pruned],
                "kept": [str(r) for r in b.kept], "changes": b.changes.summary(),
                "pruneFailed": [str(r) for r in b.prune_failed]} for b in result.bundles]}


def pass_table(result) -> str:
    rows = [["BUNDLE", "VERDICT", "APPLIED", "UNCHANGED", "PRUNED", "REASON", "MESSAGE"]]
    for b in result.bundles:
        rows.append([b.bundle, "failed" if b.failed else b.verdict, str(len(b.applied)),
                     str(b.unchanged), str(len(b.pruned)), b.reason or "-",
                     b.message.replace("\n", " ")[:120] or "-"])
    head = f"revision {result.revision}: " + ("ok" if result.ok else "FAILED")
    if result.prune_blocked:
        head += " (PruneBlocked: nothing was deleted)"
    return head + "\n" + table(rows) + "\n"


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2)
