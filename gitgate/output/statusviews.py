"""`status`, `apply` and the loop's `/status`: what gitgate did, as JSON documents and text
tables (like `flux get kustomizations`). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gitgate.apply.standing import Standing
from gitgate.apply.work import PassResult
from gitgate.karmada.dispatch import ClusterState, Health, Version
from gitgate.output.documents import document, object_ref
from gitgate.output.tables import cell, one_line, parse_stamp, rfc3339, table
from gitgate.passes.recorded import provenance_document
from gitgate.status.bundlestate import BundleState, dispatch_document
from gitgate.status.published import Published
from gitgate.timespec import age

MESSAGE_LIMIT = 160  # characters of a standing's message a table shows (its commands: all)


def standing_cell(meaning: Standing) -> str:
    """A standing in a table: its message on one line (a long one cut: `-o wide` and `-o
    json` carry it whole), then every command that changes it, never cut."""
    said = one_line(meaning.message, MESSAGE_LIMIT)
    return said + (f"; next: {meaning.next}" if meaning.commands else "")


def bundle_message(state: BundleState, whole: bool = False) -> str:
    """What the bundle's state means (`apply.standing`) with what changes it (`whole`: its
    message never cut); without one, what holds the bundle back in Karmada."""
    meaning = state.standing
    return (meaning.line() if whole else standing_cell(meaning)) or state.waiting_message()


def status_document(states: list[BundleState], observe_error: str | None = None,
                    provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """`status -o json`: every bundle's state (with `run --shard`, each says its replica)."""
    doc = document("Status", {"bundles": [state.document() for state in states]})
    if observe_error:
        doc["observeError"] = observe_error
    if provenance:
        doc["provenance"] = provenance  # as the running loop recorded it
    return doc


def cluster_cell(state: ClusterState, runs: str | None = None) -> str:
    """`member1 ✓` ready, `⏸` dispatch suspended, `✗` unhealthy or failed to apply, `…` on
    its way; then `behind` when it runs an older template, and `@abc1234` when it runs
    another revision than the applied one (`runs`, "" for none)."""
    if state.suspended:
        mark = "⏸"
    elif state.ready:
        mark = "✓"
    elif state.health is Health.UNHEALTHY or state.apply_failed:
        mark = "✗"
    else:
        mark = "…"
    cell = f"{state.name} {mark}" + (" behind" if state.version is Version.BEHIND else "")
    return cell if runs is None else f"{cell} @{runs[:7] or 'none'}"


def status_table(states: list[BundleState], now: datetime, *, wide: bool = False) -> str:
    """AGE: since the verdict last changed; APPLIED: since gitgate last wrote the bundle;
    REVISION: the revision live in Karmada, with the last one a pass tried when that is not
    live (per cluster with `-o wide`, and ATTEMPTED); CLUSTERS and HEALTH: what Karmada
    reports (`-o wide`: one row per bundle and cluster); MESSAGE: the bundle's standing and
    every command that changes it (`standing_cell`)."""
    if wide:
        rows = [["BUNDLE", "VERDICT", "CLUSTER", *ClusterState.headings(), "REVISION",
                 "ATTEMPTED", "GATES", "AGE", "SINCE", "LAST APPLIED", "MESSAGE"]]
    else:
        rows = [["BUNDLE", "VERDICT", "CLUSTERS", "HEALTH", "AGE", "APPLIED", "REVISION",
                 "MESSAGE"]]
    for state in states:
        inv, dispatch = state.record, state.dispatch
        gates = ",".join(dict.fromkeys(state.gates)) or "-"
        since, applied = parse_stamp(inv.since), parse_stamp(inv.last_applied)
        health = dispatch.health
        message = bundle_message(state, whole=wide)
        if not wide:
            clusters = "  ".join(cluster_cell(c.state, c.runs_other) for c in state.clusters)
            if dispatch.propagated and not dispatch.clusters:
                clusters = "none"  # it has objects to propagate, and reaches no cluster
            elif state.observed and state.all_members:
                clusters = "all members"  # Karmada propagates Namespaces by itself
            rows.append([inv.bundle, inv.verdict, clusters or "-",
                         str(health) if health else "-", age(since, now), age(applied, now),
                         state.revision_cell, message or "-"])
            continue
        for cluster in state.clusters or (None,):
            cells = ["-"] * (1 + len(ClusterState.headings())) if cluster is None else [
                cluster.state.name, *(cell(v) for _, v in cluster.state.columns())]
            text = (cluster.state.message if cluster is not None and cluster.state.message
                    and not inv.message else message)
            runs = inv.applied_revision if cluster is None else cluster.revision
            rows.append([inv.bundle, inv.verdict, *cells, runs[:12] or "-",
                         inv.revision[:12] or "-", gates,
                         age(since, now), inv.since or "-", inv.last_applied or "-",
                         " ".join(text.split()) or "-"])
    return table(rows) + "\n"




def pass_document(result: PassResult) -> dict[str, Any]:
    return document("ApplyResult", {
            "revision": result.revision, "ok": result.ok, "pruneBlocked": result.prune_blocked,
            "dryRun": result.dry_run,
            "bundles": [{
                "name": b.bundle, "verdict": b.verdict, "reason": b.reason, "message": b.message,
                "failed": b.failed, "applied": [object_ref(r) for r in b.applied],
                "unchanged": b.unchanged, "pruned": [object_ref(r) for r in b.pruned],
                "kept": [object_ref(r) for r in b.kept],
                "notOwned": [object_ref(r) for r in b.not_owned],
                "pruneHeld": list(b.held),
                "changes": b.changes.summary(),
                "pruneFailed": [object_ref(r) for r in b.prune_failed]}
                for b in result.bundles]})


def pass_table(result: PassResult) -> str:
    rows = [["BUNDLE", "VERDICT", "APPLIED", "UNCHANGED", "PRUNED", "REASON", "MESSAGE"]]
    for b in result.bundles:
        rows.append([b.bundle, "failed" if b.failed else b.verdict, str(len(b.applied)),
                     str(b.unchanged), str(len(b.pruned)), b.reason or "-",
                     one_line(b.message) or "-"])
    head = f"revision {result.revision}" + (" (server dry run: nothing was written)"
                                            if result.dry_run else "") + ": " + (
        "ok" if result.ok else "FAILED")
    if result.prune_blocked:
        head += " (PruneBlocked: nothing was deleted)"
    return head + "\n" + table(rows) + "\n"


def provenance_lines(doc: dict[str, Any]) -> list[str]:
    """What `status` says of a recorded provenance: only what is not in order."""
    lines = []
    signature = doc.get("signature") or {}
    if signature and not signature.get("trusted"):
        kept = signature.get("inForce")
        lines.append(f"not applied: {signature.get('message')}; " + (
            f"{str(kept)[:12]} stays in force" if kept else "nothing is applied"))
    gates = doc.get("gateTrust") or {}
    if gates.get("refused"):
        lines.append(str(gates.get("message")))
    return lines


def loop_document(seen: Published) -> dict[str, Any]:
    """The loop's `/status`: where it is, and what its last pass did, as its last turn
    published it."""
    doc: dict[str, Any] = document("LoopStatus", {
        "ready": seen.ready, "leading": seen.leading, "passes": seen.passes,
        "gitReachable": seen.git_reachable, "apiReachable": seen.api_reachable,
        "revision": seen.revision,
        "lastPass": rfc3339(seen.last_pass), "lastReason": seen.last_reason,
        "lastError": seen.last_error, "nextTransition": rfc3339(seen.next_transition),
        "repo": seen.repo, "branch": seen.branch})
    if seen.lease_problem is not None:
        doc["leaseProblem"] = seen.lease_problem
    doc.update(provenance_document(seen.signature, seen.gate_report, seen.revision))
    if seen.turn is not None:  # --shard: this replica's share
        turn = seen.turn
        doc["shard"] = {"identity": turn.identity, "acting": turn.acting, "said": turn.said(),
                        "members": list(turn.shards.members) if turn.shards else [],
                        "live": list(turn.live), "waitingFor": list(turn.waiting_for)}
    if seen.last_result is not None:
        doc["pass"] = pass_document(seen.last_result)
    if seen.observed:
        doc["lastObserved"] = rfc3339(seen.last_observed)
        if seen.observe_error:
            doc["observeError"] = seen.observe_error
        known = seen.inventories
        shards = seen.turn.shards if seen.turn is not None else None
        doc["bundles"] = [BundleState.of(known[name], dispatch, shards).document()
                          if name in known else dispatch_document(name, dispatch)
                          for name, dispatch in sorted(seen.dispatch.items())]
    return doc
