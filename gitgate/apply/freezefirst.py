"""A suspension committed to the repo lands in Karmada before anything is rendered.

A pass renders every source before it writes; a slow source (up to the render timeout) would
hold back the pass that brings an on-call's `action: suspend` gate, while Karmada keeps
dispatching what was written before. So before rendering, the loop evaluates the gate files
alone against the bundles it knows (their inventories: name, labels) and adds the suspension
to each covered bundle's live PropagationPolicies. Holds need no such step: a held bundle is
not written, and nothing is written before the pass's own plan.

A policy is rewritten as gitgate last applied it (the live object restricted to the fields
gitgate's server-side apply owns, from `managedFields`) with the suspension added: applying
anything less would take gitgate's other fields away, anything more would make gitgate own
fields other managers set. The pass that follows writes each such policy again from its
plan: the same suspension, or none when the gate approves the bundle's new content.
Pure but for `suspend_first`, which reads and writes through the ClusterPort.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

from gitgate.apiserver.ports import PolicyPort
from gitgate.apply.inventory import Inventory
from gitgate.apply.standing import reasons_of
from gitgate.errors import GitgateError
from gitgate.gate.evaluate import GateState, covers_name
from gitgate.karmada.binding import same_suspension, suspension_of, widest
from gitgate.karmada.policy import POLICY_KINDS, policy_name
from gitgate.model import FIELD_MANAGER, Action, Gate, Manifest, ObjectRef, Verdict

# a held bundle is never written, suspension included; every other one (open, suspended,
# halted, failed: its earlier templates are still in Karmada) takes the suspension
NOT_WRITTEN = str(Verdict.HELD)
SUSPENDED = (str(Verdict.SUSPENDED), str(Verdict.HALTED))


@dataclass(frozen=True)
class EarlySuspension:
    bundle: str
    gates: tuple[str, ...]
    suspension: Manifest
    written: tuple[ObjectRef, ...] = ()
    error: str = ""


def wanted_suspensions(inventories: Iterable[Inventory], states: Iterable[GateState],
                       paused: Collection[str] = ()) -> dict[str, tuple[Manifest, tuple[str, ...]]]:
    """Per known bundle covered by an active suspend gate now: the suspension those gates
    ask for together (every cluster, or the union of their clusters) and the gates' names.
    A bundle that an active hold gate covers as its record names it, or whose recorded
    folder has a `PAUSE` file (`paused`), is held by the pass that follows: nothing of it is
    written here either, whatever its record's verdict (a pass a freeze stopped mid-way
    records it failed)."""
    states = list(states)
    active = [s.gate for s in states if s.active and s.gate.action is Action.SUSPEND]
    holding = [s.gate for s in states if s.active and s.gate.action is Action.HOLD]
    wanted: dict[str, tuple[Manifest, tuple[str, ...]]] = {}
    for inventory in inventories:
        labels = dict(inventory.labels)
        if inventory.verdict == NOT_WRITTEN or inventory.bundle in paused or any(
                covers_name(g, inventory.bundle, labels) for g in holding):
            continue
        gates = [g for g in active if covers_name(g, inventory.bundle, labels)]
        if not gates or _recorded(inventory, gates):
            continue
        suspension: Manifest | None = None
        for gate in gates:
            asked = ({"dispatchingOnClusters": {"clusterNames": sorted(gate.clusters)}}
                     if gate.clusters else {"dispatching": True})
            suspension = widest(suspension, asked)
        assert suspension is not None
        wanted[inventory.bundle] = (suspension, tuple(g.name for g in gates))
    return wanted


def _recorded(inventory: Inventory, gates: list[Gate]) -> bool:
    """The last pass already suspended the bundle for exactly these gates (and clusters): its
    policies carry the suspension, and the pass that follows keeps it (no request needed)."""
    if inventory.verdict not in SUSPENDED:
        return False
    recorded = {(r.gate, r.clusters) for r in reasons_of(inventory)
                if r.action == Action.SUSPEND}
    return {(g.name, tuple(g.clusters)) for g in gates} <= recorded


def owned_fields(live: Manifest, manager: str = FIELD_MANAGER) -> Manifest | None:
    """The live object restricted to what `manager` last applied (its `Apply` entry in
    managedFields), or None when it applied nothing there."""
    entry = next((m for m in (live.get("metadata") or {}).get("managedFields") or []
                  if m.get("manager") == manager and m.get("operation") == "Apply"), None)
    if entry is None or not isinstance(entry.get("fieldsV1"), dict):
        return None
    owned = _restrict(live, entry["fieldsV1"])
    if not isinstance(owned, dict):
        return None
    meta = live.get("metadata") or {}
    owned["apiVersion"], owned["kind"] = live["apiVersion"], live["kind"]
    owned.setdefault("metadata", {})
    owned["metadata"]["name"] = meta.get("name")
    if meta.get("namespace"):
        owned["metadata"]["namespace"] = meta["namespace"]
    return owned


def _restrict(value: Any, fields: dict[str, Any]) -> Any:
    """`value` cut down to the fieldsV1 set `fields` (`f:` map keys, `k:` keyed list items,
    `v:` set values; `{}` or `.` alone: the whole value)."""
    children = {k: v for k, v in fields.items() if k != "."}
    if not children:
        return value
    if isinstance(value, dict):
        out = {}
        for key, sub in children.items():
            name = key[2:]
            if key.startswith("f:") and name in value:
                out[name] = _restrict(value[name], sub or {})
        return out
    if isinstance(value, list):
        items = []
        for key, sub in children.items():
            if key.startswith("k:"):
                match = json.loads(key[2:])
                found = next((i for i in value if isinstance(i, dict)
                              and all(i.get(k) == v for k, v in match.items())), None)
                if found is not None:
                    items.append(_restrict(found, sub or {}))
            elif key.startswith("v:"):
                items.append(json.loads(key[2:]))
        return items
    return value


def suspended_policy(live: Manifest, suspension: Manifest) -> Manifest | None:
    """What to apply so that the policy carries at least `suspension` (the widest of it and the
    live one), or None when it already does or gitgate does not own the policy."""
    owned = owned_fields(live)
    if owned is None:
        return None
    current = suspension_of(live)
    merged = widest(current, suspension)
    if current is not None and same_suspension(current, merged):
        return None
    owned.setdefault("spec", {})["suspension"] = merged
    return owned


def suspend_first(cluster: PolicyPort, inventories: dict[str, Inventory],
                  states: Iterable[GateState], paused: Collection[str] = ()
                  ) -> list[EarlySuspension]:
    """Write each suspension the gates ask for into the bundle's live generated policies (the
    only write; a failure is reported and left to the pass that follows)."""
    done = []
    for bundle, (suspension, gates) in sorted(wanted_suspensions(inventories.values(),
                                                                states, paused).items()):
        written: list[ObjectRef] = []
        error = ""
        # the generated policies' names, and the one earlier releases gave every instance's
        names = {policy_name(bundle, inventories[bundle].instance), policy_name(bundle)}
        for entry in inventories[bundle].entries:
            if entry.kind not in POLICY_KINDS or entry.name not in names:
                continue
            try:
                live = cluster.get(entry.api_version, entry.kind, entry.namespace, entry.name)
                change = suspended_policy(live, suspension) if live is not None else None
                if change is not None:
                    cluster.apply(change)
                    written.append(entry.ref)
            except GitgateError as exc:
                error = exc.message
        done.append(EarlySuspension(bundle, gates, suspension, tuple(written), error))
    return done


def unrecorded(inventories: dict[str, Inventory], early: Iterable[EarlySuspension]
               ) -> dict[str, Inventory]:
    """`inventories` with each policy written here marked unknown (an empty hash): its
    record does not hold what it carries now, so the pass that follows writes it from its
    plan, with the suspension or without it (a gate's approval of the new content lets that
    through), rather than taking it for unchanged."""
    out = dict(inventories)
    for item in early:
        if not item.written or item.bundle not in out:
            continue
        written = set(item.written)
        inventory = out[item.bundle]
        out[item.bundle] = replace(inventory, entries=tuple(
            replace(e, hash="") if e.ref in written else e for e in inventory.entries))
    return out
