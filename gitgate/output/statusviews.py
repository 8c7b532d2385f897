"""`status`, `apply` and the loop's `/status`: what gitgate did, as JSON documents and text
tables (like `flux get kustomizations`). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gitgate.apply.inventory import Inventory
from gitgate.apply.observe import Observation
from gitgate.apply.standing import Standing, reasons_of, standing_of
from gitgate.apply.work import PassResult
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.loop import Reconciler
from gitgate.model import ReasonKind
from gitgate.model.shardmap import ShardMap
from gitgate.output.documents import document, object_ref
from gitgate.output.tables import one_line, parse_stamp, rfc3339, table
from gitgate.passes.recorded import provenance_document
from gitgate.timespec import age

MESSAGE_LIMIT = 160  # characters of a standing's message a table shows (its commands: all)


def standing_cell(meaning: Standing) -> str:
    """A standing in a table: its message on one line (a long one cut: `-o wide` and `-o
    json` carry it whole), then every command that changes it, never cut."""
    said = one_line(meaning.message, MESSAGE_LIMIT)
    return said + (f"; next: {meaning.next}" if meaning.commands else "")


def _bundle_message(inv: Inventory, dispatch: Dispatch | None, whole: bool = False) -> str:
    """What the bundle's state means (`apply.standing`) with what changes it (`whole`: its
    message never cut); without one, what holds the bundle back in Karmada: an object
    nothing propagates, else the first cluster (not suspended) that is not ready."""
    meaning = standing_of(inv)
    said = meaning.line() if whole else standing_cell(meaning)
    if said or dispatch is None:
        return said
    waiting = dispatch.waiting_on()
    return dispatch.message or (waiting[0].message if waiting else "")


def namespaces_everywhere(inv: Inventory, dispatch: Dispatch | None) -> bool:
    """A bundle of Namespaces alone (policies aside): Karmada's namespace controller sends a
    Namespace to every member cluster by itself, with no binding to show per cluster. It
    skips `default`, its own and `kube-*` namespaces (its default --skipped-propagating-
    namespaces), and those labelled skip-auto-propagation (the inventory does not keep
    labels: such a bundle is shown as reaching all members)."""
    return (dispatch is not None and not dispatch.clusters and not dispatch.propagated
            and any(e.kind == "Namespace" and "/" not in e.api_version
                    and not _karmada_skips(e.name) for e in inv.entries))


def _karmada_skips(namespace: str) -> bool:
    return (namespace in ("default", "karmada-system", "karmada-cluster")
            or namespace.startswith(("karmada-es-", "kube-")))


def _pending(inv: Inventory) -> bool:
    """The last attempted revision changes the bundle, and that change is not live."""
    return bool(inv.revision) and inv.applied_digest != inv.digest


def revision_cell(inv: Inventory) -> str:
    """The live revision; `(tried abc1234)` beside it when a later one is not applied."""
    cell = inv.applied_revision[:12] or "-"
    if _pending(inv) and inv.revision != inv.applied_revision:
        cell += f" (tried {inv.revision[:7]})"
    return cell


def bundle_document(inv: Inventory, dispatch: Dispatch) -> dict[str, Any]:
    """One bundle as `status -o json` and the loop's `/status` show it: what gitgate decided,
    which revision is live (lastAppliedRevision) and which was last tried
    (lastAttemptedRevision; `revision` says the same, kept for older readers), and per member
    cluster what Karmada reports with the revision it runs."""
    clusters = [{**c.as_dict(), "revision": inv.cluster_revision(c.name) or None}
                for c in dispatch.clusters]
    meaning = standing_of(inv)
    return {"name": inv.bundle, "verdict": inv.verdict, "revision": inv.revision,
            "lastAttemptedRevision": inv.revision or None,
            "lastAppliedRevision": inv.applied_revision or None,
            "pending": _pending(inv),
            "digest": inv.digest,
            "gates": [r.gate for r in meaning.reasons if r.kind != ReasonKind.ROLLOUT],
            "reasons": [r.document() for r in meaning.reasons], "since": inv.since or None,
            "lastApplied": inv.last_applied or None,
            **meaning.as_dict(), "outcome": inv.message or None, "objects": len(inv.entries),
            **dispatch_document(inv.bundle, dispatch), "clusters": clusters,
            "allMembers": namespaces_everywhere(inv, dispatch)}


def status_document(inventories: list[Inventory], observation: Observation | None = None,
                    provenance: dict[str, Any] | None = None,
                    shards: ShardMap | None = None) -> dict[str, Any]:
    """`shards`: with `run --shard`, the agreed assignment: each bundle says its replica."""
    seen = observation.bundles if observation else {}
    bundles = [with_shard(bundle_document(inv, seen.get(inv.bundle, Dispatch())), shards)
               for inv in sorted(inventories, key=lambda i: i.bundle)]
    doc = document("Status", {"bundles": bundles})
    if observation is not None and observation.error:
        doc["observeError"] = observation.error
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


def _runs_other(inv: Inventory, cluster: str) -> str | None:
    runs = inv.cluster_revision(cluster)
    return None if runs == inv.applied_revision else runs


def status_table(inventories: list[Inventory], now: datetime, *, wide: bool = False,
                 observation: Observation | None = None) -> str:
    """AGE: since the verdict last changed; APPLIED: since gitgate last wrote the bundle;
    REVISION: the revision live in Karmada, with the last one a pass tried when that is not
    live (per cluster with `-o wide`, and ATTEMPTED); CLUSTERS and HEALTH: what Karmada
    reports (`-o wide`: one row per bundle and cluster); MESSAGE: the bundle's standing and
    every command that changes it (`standing_cell`)."""
    seen = observation.bundles if observation else {}
    if wide:
        rows = [["BUNDLE", "VERDICT", "CLUSTER", "SCHEDULED", "APPLIED", "HEALTH", "SUSPENDED",
                 "VERSION", "REVISION", "ATTEMPTED", "GATES", "AGE", "SINCE", "LAST APPLIED",
                 "MESSAGE"]]
    else:
        rows = [["BUNDLE", "VERDICT", "CLUSTERS", "HEALTH", "AGE", "APPLIED", "REVISION",
                 "MESSAGE"]]
    for inv in sorted(inventories, key=lambda i: i.bundle):
        dispatch = seen.get(inv.bundle)
        gates = ",".join(dict.fromkeys(r.gate for r in reasons_of(inv)
                                       if r.kind != ReasonKind.ROLLOUT)) or "-"
        since, applied = parse_stamp(inv.since), parse_stamp(inv.last_applied)
        health = dispatch.health if dispatch else None
        message = _bundle_message(inv, dispatch, whole=wide)
        if not wide:
            clusters = "  ".join(cluster_cell(c, _runs_other(inv, c.name))
                                 for c in dispatch.clusters) if dispatch else ""
            if dispatch is not None and dispatch.propagated and not dispatch.clusters:
                clusters = "none"  # it has objects to propagate, and reaches no cluster
            elif namespaces_everywhere(inv, dispatch):
                clusters = "all members"  # Karmada propagates Namespaces by itself
            rows.append([inv.bundle, inv.verdict, clusters or "-",
                         str(health) if health else "-", age(since, now), age(applied, now),
                         revision_cell(inv), message or "-"])
            continue
        states: list[ClusterState | None] = list(dispatch.clusters) if dispatch else []
        for state in states or [None]:
            cells = ["-"] * 6 if state is None else [
                state.name, _yes(state.scheduled), _yes(state.applied), str(state.health),
                _yes(state.suspended), str(state.version)]
            text = (state.message if state is not None and state.message and not inv.message
                    else message)
            runs = inv.applied_revision if state is None else inv.cluster_revision(state.name)
            rows.append([inv.bundle, inv.verdict, *cells, runs[:12] or "-",
                         inv.revision[:12] or "-", gates,
                         age(since, now), inv.since or "-", inv.last_applied or "-",
                         " ".join(text.split()) or "-"])
    return table(rows) + "\n"


def _yes(value: bool) -> str:
    return "yes" if value else "no"


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
    if state.lease_problem is not None:
        doc["leaseProblem"] = state.lease_problem
    doc.update(provenance_document(state.signature, state.gate_report, state.revision))
    if state.turn is not None:  # --shard: this replica's share
        turn = state.turn
        doc["shard"] = {"identity": turn.identity, "acting": turn.acting, "said": turn.said(),
                        "members": list(turn.shards.members) if turn.shards else [],
                        "live": list(turn.live), "waitingFor": list(turn.waiting_for)}
    if state.last_result is not None:
        doc["pass"] = pass_document(state.last_result)
    if state.observation is not None:
        doc["lastObserved"] = rfc3339(state.last_observed)
        if state.observation.error:
            doc["observeError"] = state.observation.error
        known = state.inventories or {}
        shards = state.turn.shards if state.turn is not None else None
        doc["bundles"] = [with_shard(bundle_document(known[name], dispatch), shards)
                          if name in known else dispatch_document(name, dispatch)
                          for name, dispatch in sorted(state.observation.bundles.items())]
    return doc


def with_shard(doc: dict[str, Any], shards: ShardMap | None) -> dict[str, Any]:
    """The replica whose shard holds the bundle (`run --shard`), when there are shards."""
    return doc if shards is None else {**doc, "shard": shards.owner(doc["name"])}


def dispatch_document(bundle: str, dispatch: Dispatch) -> dict[str, Any]:
    health = dispatch.health
    return {"name": bundle, "health": str(health) if health else None,
            "dispatchMessage": dispatch.message,
            "clusters": [c.as_dict() for c in dispatch.clusters]}
