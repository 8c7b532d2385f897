"""`gitgate get`, `describe` and `history`: a bundle's record (its Bundle) as `kubectl get
bundles.gitgate.io` shows it, a page of everything known of one bundle, and its last
applies. Pure: records and Karmada's report in, text and documents out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.apply.recordformat import conditions_of
from gitgate.karmada.dispatch import Dispatch
from gitgate.output.analysisviews import analysis_lines
from gitgate.output.documents import document, object_ref
from gitgate.output.statusviews import cluster_cell, standing_cell
from gitgate.output.tables import cell, one_line, parse_stamp, table
from gitgate.passes.recorded import BundleEvent
from gitgate.status.bundlestate import BundleState
from gitgate.timespec import age


def _ready(inv: Inventory) -> tuple[str, str]:
    ready = conditions_of(inv).get("Ready")
    return (ready["status"] or "Unknown", ready["reason"]) if ready else ("Unknown", "")


def clusters_ready(dispatch: Dispatch | None) -> str:
    """`2/3`: member clusters ready out of those scheduled (`-` when none is)."""
    scheduled = [c for c in dispatch.clusters if c.scheduled] if dispatch else []
    return f"{sum(1 for c in scheduled if c.ready)}/{len(scheduled)}" if scheduled else "-"


def get_table(states: list[BundleState], now: datetime, wide: bool = False) -> str:
    """The printer columns of bundles.gitgate.io: NAME VERDICT READY CLUSTERS REVISION AGE,
    and MESSAGE: what the state means and what changes it (`apply.standing`); `-o wide`
    adds REASON, SOURCE, REPO (the repo and folder it was applied from), ATTEMPTED."""
    head = ["NAME", "VERDICT", "READY", "CLUSTERS", "REVISION", "AGE"]
    rows = [head + (["REASON", "SOURCE", "REPO", "ATTEMPTED"] if wide else []) + ["MESSAGE"]]
    for state in states:
        inv = state.record
        status, reason = _ready(inv)
        row = [inv.bundle, inv.verdict or "-", status, clusters_ready(state.dispatch),
               inv.applied_revision[:12] or "-", age(parse_stamp(inv.since), now)]
        if wide:
            row += [reason or "-", inv.source or "-", str(inv.origin) or "-",
                    inv.revision[:12] or "-"]
        rows.append([*row, standing_cell(state.standing) or "-"])
    return table(rows)


def get_document(states: list[BundleState]) -> dict[str, Any]:
    return document("BundleList", {"bundles": [
        {"name": inv.bundle, "verdict": inv.verdict, "ready": _ready(inv)[0],
         "reason": _ready(inv)[1], "clusters": clusters_ready(state.dispatch),
         "lastAppliedRevision": inv.applied_revision or None,
         "lastAttemptedRevision": inv.revision or None, "source": inv.source,
         **_origin(inv), "since": inv.since or None, **state.standing.as_dict()}
        for state, inv in ((state, state.record) for state in states)]})


def _origin(inv: Inventory) -> dict[str, str | None]:
    """The repo and gitgate folder a record was applied from (None: not recorded)."""
    return {"repo": inv.origin.repo or None, "repoPath": inv.origin.path or None}


def history_table(inv: Inventory, now: datetime) -> str:
    rows = [["REVISION", "DIGEST", "WHEN", "OUTCOME", "BY"]]
    for entry in reversed(inv.history):
        rows.append([entry.get("revision", "")[:12] or "-", entry.get("digest", "")[:12] or "-",
                     f"{age(parse_stamp(entry.get('at', '')), now)} ago",
                     entry.get("outcome", "-"), entry.get("by", "-")])
    return table(rows) if len(rows) > 1 else f"{inv.bundle}: no apply recorded yet\n"


def history_document(inv: Inventory) -> dict[str, Any]:
    return document("BundleHistory", {"name": inv.bundle, "history": list(inv.history)})


def describe_document(state: BundleState, events: list[BundleEvent]) -> dict[str, Any]:
    inv = state.record
    return document("BundleDescription", {
        **state.document(), "source": inv.source, "instance": inv.instance,
        **_origin(inv),
        "conditions": list(inv.conditions), "history": list(inv.history),
        "objectRefs": [{**object_ref(e.ref, e.api_version), "hash": e.hash}
                       for e in inv.entries], "events": events})


def describe_text(state: BundleState, events: list[BundleEvent], now: datetime) -> str:
    """kubectl describe's layout: fields, then sections."""
    inv, meaning = state.record, state.standing
    status, reason = _ready(inv)
    lines = [f"Name:         {inv.bundle}",
             f"Instance:     {inv.instance}",
             f"Source:       {inv.source or '-'}",
             f"Repo:         {str(inv.origin) or '-'}",
             f"Verdict:      {inv.verdict}  (Ready={status}{f', {reason}' if reason else ''})",
             f"Revision:     {state.revision_cell}",
             f"Attempted:    {inv.revision[:12] or '-'}",
             f"Message:      {one_line(meaning.message) or '-'}",
             f"Next:         {meaning.next or '-'}",
             f"Rollout:      {meaning.rollout or '-'}",
             f"Since:        {inv.since or '-'}",
             f"Last applied: {inv.last_applied or '-'}"]
    lines += analysis_lines(inv)
    lines.append("Gates:" + ("" if meaning.gates else "        none in force"))
    lines += [f"  {one_line(g.said())}" for g in meaning.gates]
    lines.append("Reasons:" + ("" if meaning.reasons else "      none"))
    for r in meaning.reasons:
        where = f" ({r.where()})" if r.file else ""
        lines.append(f"  {r.kind} {r.gate}{where}: {one_line(r.reason)}")
    lines.append("Clusters:" + ("" if state.clusters else "     none reported"))
    for c, runs in ((c.state, c.revision) for c in state.clusters):
        signals = " ".join(f"{name.lower()}={cell(v)}" for name, v in c.columns())
        lines.append(f"  {cluster_cell(c)}  {signals} revision={runs[:12] or '-'}"
                     + (f"  {one_line(c.message)}" if c.message else ""))
    lines.append("Conditions:")
    rows = [["  TYPE", "STATUS", "REASON", "SINCE"]] + [
        [f"  {c['type']}", c["status"], c["reason"] or "-",
         age(parse_stamp(c["lastTransitionTime"]), now)]
        for c in inv.conditions]
    lines += table(rows).rstrip("\n").splitlines() if inv.conditions else ["  none yet"]
    lines.append(f"Objects ({len(inv.entries)}):")
    lines += [f"  {e.ref}" for e in inv.entries]
    lines.append("History:")
    lines += history_table(inv, now).rstrip("\n").splitlines() if inv.history else [
        "  none yet"]
    lines.append("Events:" + ("" if events else "       none"))
    rows = [["  TYPE", "REASON", "AGE", "MESSAGE"]] + [
        [f"  {e.get('type', '-')}", str(e.get("reason", "-")),
         age(parse_stamp(str(e.get("at") or "")), now), one_line(str(e.get("note") or ""))]
        for e in events]
    if events:
        lines += table(rows).rstrip("\n").splitlines()
    return "\n".join(lines) + "\n"

