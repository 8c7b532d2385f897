"""A bundle's record as a `Bundle` object (`bundles.gitgate.io`) in `gitgate-system`, where
`kubectl get bundles.gitgate.io`, k9s and kstatus-aware tools find it. Pure encoding: the
spec (what Git asks the bundle to be: bundle, source, labels, the digest of its objects and
overrides) and the status (everything gitgate knows of it: the revisions last attempted and
applied, the inventory of applied objects, verdict and reasons, conditions, what is live,
rollout and sync state, a bounded history). The spec is written with the object, the status
through its `status` subresource, so `metadata.generation` counts the changes Git asked of
the bundle (as a Flux Kustomization's counts changes of its own definition, not new
revisions of its source) and `status.observedGeneration` the one last recorded. A commit
that leaves a bundle as it was writes its status only."""

from __future__ import annotations

import hashlib
from typing import Any

from gitgate.apply.conditions import BundleCondition, conditions_for, read_condition
from gitgate.apply.inventory import (
    DEFAULT_INSTANCE,
    HISTORY_LIMIT,
    NAMESPACE,
    PENDING_MESSAGE,
    Entry,
    Inventory,
)
from gitgate.apply.recordedreason import RecordedReason
from gitgate.apply.standing import reasons_of, standing_of
from gitgate.apply.transitions import Transition
from gitgate.karmada.dispatch import Dispatch
from gitgate.model import Manifest, ReasonKind, Verdict
from gitgate.model.ownership import INSTANCE_LABEL, Origin
from gitgate.model.shared import shared, shared_tree
from gitgate.progression.record import Progression

GROUP = "gitgate.io"
API_VERSION = f"{GROUP}/v1alpha1"
KIND = "Bundle"
RETRY_ANNOTATION = "gitgate.io/retry-rollout"  # `gitgate resume`: retry a halted wave


def bundle_name(bundle: str, instance: str = DEFAULT_INSTANCE) -> str:
    """The Bundle's name: the bundle's (`/` as `.`); another instance adds its own first."""
    stored = bundle.replace("/", ".")
    return stored if instance == DEFAULT_INSTANCE else f"{instance}.{stored}"


# Karmada's resource detector takes every object of a kind it does not skip for a template,
# and keeps each one no policy claims on a waiting list that every new or changed
# PropagationPolicy reads object by object (a deep copy each). A Bundle is gitgate's record,
# never a template: this label, Karmada's own way of saying another controller is in charge
# of an object, takes it off that list, and no policy can propagate it to a member.
CLAIMED_LABEL = "resourcetemplate.karmada.io/claimed-by"
CLAIMED_BY = "Bundle.gitgate.io"


def _meta(inventory: Inventory) -> dict[str, Any]:
    return {"name": bundle_name(inventory.bundle, inventory.instance), "namespace": NAMESPACE,
            "labels": {INSTANCE_LABEL: inventory.instance,
                       "app.kubernetes.io/managed-by": "gitgate", CLAIMED_LABEL: CLAIMED_BY}}


def bundle_spec(inventory: Inventory) -> dict[str, Any]:
    """What Git asks the bundle to be; a change bumps the Bundle's generation (a commit
    elsewhere in the repo does not). `repo` and `repoPath`: the repo and gitgate folder the
    instance's bundles come from (`model.ownership.Origin`), where known."""
    spec: dict[str, Any] = {"bundle": inventory.bundle, "instance": inventory.instance,
                            "source": inventory.source, "labels": dict(inventory.labels),
                            "digest": inventory.digest}
    if inventory.origin.known:
        spec["repo"] = inventory.origin.repo
        spec["repoPath"] = inventory.origin.path
    return spec


def to_bundle(inventory: Inventory) -> Manifest:
    """The Bundle object without status (applied to the object itself)."""
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": _meta(inventory),
            "spec": bundle_spec(inventory)}


def to_new_bundle(inventory: Inventory) -> Manifest:
    """A new bundle's write-ahead record in one request: its Bundle created with the objects
    the pass may create (and the revision it attempts) in `spec.intent`, where a status could
    only be written by a second request. The status the pass writes at its end takes over
    (`from_bundle`); the field stays until the bundle's spec is next applied, which drops it.
    The objects go as `ids`, one string each (`intent_id`): kube-apiserver spends about half
    as much on the record as with a map per object (bench/results/history.md); as
    `objects` only where an entry cannot be one (a hash, or a `/` in a name)."""
    bundle = to_bundle(inventory)
    ids = [intent_id(e) for e in inventory.entries]
    bundle["spec"]["intent"] = (
        {"revision": inventory.revision, "ids": ids} if all(ids) else
        {"revision": inventory.revision,
         "objects": [e.as_dict(facts=False) for e in inventory.entries]})
    return bundle


def intent_id(entry: Entry) -> str | None:
    """An unhashed entry as one string, `apiVersion/kind/namespace/name` (the namespace empty
    for a cluster-scoped object), read back by `entry_of_id`; None for an entry with a hash,
    or with a `/` where the string could not tell it apart (Kubernetes allows none in a
    kind, a namespace or a name, but a rendered object is not checked yet)."""
    parts = (entry.kind, entry.namespace, entry.name)
    if entry.hash or not entry.api_version or not entry.kind or not entry.name or any(
            "/" in part for part in parts) or entry.api_version.count("/") > 1:
        return None
    return "/".join((entry.api_version, *parts))


def entry_of_id(text: object) -> Entry | None:
    """The entry an `intent_id` string names; None for anything else."""
    if not isinstance(text, str):
        return None
    parts = text.rsplit("/", 3)
    if len(parts) != 4:
        return None
    api_version, kind, namespace, name = parts
    if not api_version or api_version.count("/") > 1 or not kind or not name:
        return None
    return Entry(shared(api_version), shared(kind), shared(namespace), name, "")


def _intent_objects(intent: dict[str, Any]) -> list[Any]:
    """A write-ahead intent's objects as status entries (maps), from either form."""
    ids = [entry_of_id(text) for text in _list(intent.get("ids"))]
    return [*_list(intent.get("objects")), *(e.as_dict() for e in ids if e is not None)]


def holds_intent(obj: Manifest, inventory: Inventory) -> bool:
    """The Bundle as the server answered its creation reads as `inventory`'s intent: the
    server kept every object in `spec.intent` (a CRD of an earlier gitgate prunes the field,
    its schema lacking it), and no status of objects is there to be read instead."""
    if "objects" in _dict(obj.get("status")):
        return False
    intent = _dict(_dict(obj.get("spec")).get("intent"))
    return len(_intent_objects(intent)) == len(inventory.entries)


# the record's spec fields a Bundle CRD of an earlier gitgate may not declare: a record goes
# on without them there (`ledger.ensure_bundle_crd` says to apply deploy/crds/)
OPTIONAL_SPEC_FIELDS = ("digest", "intent", "repo", "repoPath")


def without_undeclared(bundle: Manifest, refusal: str) -> Manifest | None:
    """`bundle` without the optional spec fields the API server's `refusal` names as not in
    its schema (server-side apply refuses such a field whatever the field validation:
    `.spec.digest: field not declared in schema`); None when it names none of them."""
    spec = _dict(bundle.get("spec"))
    dropped = {name for name in OPTIONAL_SPEC_FIELDS
               if name in spec and f".spec.{name}: field not declared in schema" in refusal}
    if not dropped:
        return None
    return {**bundle, "spec": {k: v for k, v in spec.items() if k not in dropped}}


def to_bundle_status(inventory: Inventory, generation: int, now: str) -> Manifest:
    """The status, applied through the `status` subresource. `generation`: the Bundle's, as
    the spec write left it; `now`: when a condition that changes is said to have changed."""
    meaning = standing_of(inventory)
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "verdict": inventory.verdict,
        "conditions": list(conditions_for(inventory, inventory.conditions, now,
                                          rolling=rolling(inventory), said=meaning.message,
                                          approved=any(g.approved for g in meaning.gates))),
        "reasons": [r.document() for r in inventory.reasons], "message": inventory.message,
        "since": inventory.since, "lastApplied": inventory.last_applied,
        "lastFullApply": inventory.last_full_apply,
        "lastAttemptedRevision": inventory.revision, "digest": inventory.digest,
        "lastAppliedRevision": inventory.applied_revision,
        "appliedDigest": inventory.applied_digest,
        "revision": inventory.applied_revision[:12],  # the short form the printer shows
        "clustersBehind": dict(inventory.clusters_behind),
        "overridesBehind": list(inventory.overrides_behind),
        **objects_status(inventory.entries),
        "history": list(inventory.history[-HISTORY_LIMIT:]),
    }
    if inventory.progression.rollout:
        status["rollout"] = inventory.progression.rollout
    if inventory.progression.hooks:
        status["hooks"] = inventory.progression.hooks
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": _meta(inventory),
            "status": status}


OBSERVER = "gitgate-observer"  # the field manager of what Karmada reports, in the status


def clusters_status(inventory: Inventory, dispatch: Dispatch) -> Manifest:
    """What Karmada reports of the bundle, per member cluster, for the status (`clusters`,
    and `clustersReady` for the printer: ready / scheduled), written by the loop's observer
    under its own field manager beside the pass's own fields."""
    scheduled = [c for c in dispatch.clusters if c.scheduled]
    ready = sum(1 for c in scheduled if c.ready)
    healthy = (inventory.applied_revision if scheduled and ready == len(scheduled)
               and not inventory.clusters_behind else inventory.healthy_revision)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": _meta(inventory),
            "status": {
                "lastHealthyRevision": healthy,
                "clustersReady": f"{ready}/{len(scheduled)}",
                "clusters": [{**{k: v for k, v in c.as_dict().items()
                                 if not (k == "message" and not v)},
                              "revision": inventory.cluster_revision(c.name)}
                             for c in dispatch.clusters]}}


def conditions_of(inventory: Inventory) -> dict[str, BundleCondition]:
    """The record's conditions by type; worked out from its verdict when it has none (a
    record an earlier release kept)."""
    meaning = standing_of(inventory)
    found = inventory.conditions or conditions_for(
        inventory, (), inventory.since, rolling=rolling(inventory), said=meaning.message,
        approved=any(g.approved for g in meaning.gates))
    return {c["type"]: c for c in found}


def rolling(inventory: Inventory) -> bool:
    """A rollout is between waves: the bundle is suspended on its clusters not released yet,
    by its rollout (not a gate)."""
    return inventory.verdict == Verdict.SUSPENDED and any(
        r.kind == ReasonKind.ROLLOUT for r in reasons_of(inventory))


def retry_request(inventory: Inventory, moment: str) -> Manifest:
    """The one field `gitgate resume` writes into a bundle's record: a request to retry its
    halted rollout, an annotation under its own field manager, so the reconciler's writes
    (which never set it) leave it in place, even mid-pass."""
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": bundle_name(inventory.bundle, inventory.instance),
                         "namespace": NAMESPACE, "annotations": {RETRY_ANNOTATION: moment}}}


def objects_status(entries: tuple[Entry, ...]) -> dict[str, Any]:
    """`status.objects`, each entry's labels written once per distinct set: the set's index
    in `status.labelSets` (a bundle's objects mostly share their labels, the keys long)."""
    sets: dict[tuple[tuple[str, str], ...], int] = {}
    objects = []
    for entry in entries:
        out = entry.as_dict()
        if entry.labels:
            out["labels"] = sets.setdefault(entry.labels, len(sets))
        objects.append(out)
    return {"objects": objects, **({"labelSets": [dict(labels) for labels in sets]}
                                    if sets else {})}


def from_bundle(obj: Manifest) -> Inventory:
    """The inventory a Bundle records. A field of a shape gitgate does not write reads as
    unknown, and unknown reads as what holds most (every cluster behind)."""
    meta = obj.get("metadata") or {}
    spec = _dict(obj.get("spec"))
    status = _dict(obj.get("status"))
    if "objects" not in status and isinstance(spec.get("intent"), dict):
        status = {**status, **_pending_status(spec)}  # a pass that did not record its end
    sets = [_entry_labels(s) for s in _list(status.get("labelSets"))]
    entries = tuple(  # what recurs across 50,000 entries is held once (`model.shared`)
        Entry(shared(str(e["apiVersion"])), shared(str(e["kind"])),
              shared(str(e.get("namespace") or "")), str(e["name"]), str(e.get("hash") or ""),
              _entry_labels(e.get("labels"), sets), _entry_uses(e.get("uses")),
              _entry_uses(e.get("acts")))
        for e in _list(status.get("objects")) if isinstance(e, dict)
        and all(isinstance(e.get(k), str) for k in ("apiVersion", "kind", "name")))
    behind = status.get("clustersBehind", {})
    overrides = status.get("overridesBehind", [])
    return Inventory(
        bundle=str(spec.get("bundle") or meta.get("name", "")),
        entries=entries,
        revision=shared(str(status.get("lastAttemptedRevision") or spec.get("revision") or "")),
        digest=str(status.get("digest") or ""), verdict=shared(str(status.get("verdict") or "")),
        reasons=tuple(RecordedReason.of(shared_tree(r)) for r in _list(status.get("reasons"))
                      if isinstance(r, dict)),
        message=str(status.get("message") or ""), since=shared(str(status.get("since") or "")),
        last_applied=shared(str(status.get("lastApplied") or "")),
        last_full_apply=shared(str(status.get("lastFullApply") or "")),
        instance=str(spec.get("instance") or (meta.get("labels") or {}).get(
            INSTANCE_LABEL, DEFAULT_INSTANCE)),
        source=str(spec.get("source") or ""),
        origin=Origin(str(spec.get("repo") or ""), str(spec.get("repoPath") or "")),
        labels=tuple(sorted((str(k), str(v)) for k, v in _dict(spec.get("labels")).items())),
        progression=Progression(str(status.get("rollout") or ""),
                                str(status.get("hooks") or ""),
                                str((meta.get("annotations") or {}).get(RETRY_ANNOTATION)
                                    or "")),
        overrides_behind=tuple(str(c) for c in overrides) if isinstance(overrides, list)
        else ("*",),
        applied_revision=shared(str(status.get("lastAppliedRevision") or "")),
        applied_digest=str(status.get("appliedDigest") or ""),
        clusters_behind=tuple(sorted((str(k), str(v)) for k, v in behind.items()))
        if isinstance(behind, dict) else (("*", ""),),
        generation=int(meta.get("generation") or 0), uid=str(meta.get("uid") or ""),
        claimed=(meta.get("labels") or {}).get(CLAIMED_LABEL) == CLAIMED_BY,
        healthy_revision=shared(str(status.get("lastHealthyRevision") or "")),
        conditions=tuple(read_condition(shared_tree(c)) for c in _list(status.get("conditions"))
                         if isinstance(c, dict)),
        history=tuple(shared_tree(h) for h in _list(status.get("history"))
                      if isinstance(h, dict)))


def _pending_status(spec: dict[str, Any]) -> dict[str, Any]:
    """What a new bundle's write-ahead record (`to_new_bundle`) says, as the status the pass
    would have written before its first object: every object it may create, the revision it
    attempts, the digest Git asks for, pending (beside what the loop's observer may have
    written of Karmada's view since)."""
    intent = _dict(spec.get("intent"))
    return {"objects": _intent_objects(intent),
            "lastAttemptedRevision": str(intent.get("revision") or ""),
            "digest": str(spec.get("digest") or ""), "verdict": str(Verdict.PENDING),
            "message": PENDING_MESSAGE}


def _entry_labels(value: Any, sets: list[tuple[tuple[str, str], ...] | None] | None = None
                  ) -> tuple[tuple[str, str], ...] | None:
    """An entry's recorded labels (a map, or the index of one in `sets`); None (unknown) when
    absent or of another shape."""
    if isinstance(value, int) and not isinstance(value, bool) and sets is not None:
        return sets[value] if 0 <= value < len(sets) else None
    if not isinstance(value, dict):
        return None
    return tuple(sorted((shared(str(k)), shared(str(v))) for k, v in value.items()))


def _entry_uses(value: Any) -> tuple[str, ...] | None:
    """What an entry's workload uses (or the bundles its override acted on); None (unknown)
    when absent or of another shape."""
    if not isinstance(value, list):
        return None
    return tuple(shared(str(v)) for v in value)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


RECORD_LABEL = "gitgate.io/record"  # on an event: the name of the Bundle it is about
CONTROLLER = "gitgate.io/gitgate"


def event_for(inventory: Inventory, uid: str, transition: Transition, now: str,
              order: int = 0) -> Manifest:
    """An `events.k8s.io/v1` Event about the bundle's Bundle (its `regarding`), as `kubectl
    describe` lists it; `order` (microseconds past `now`) keeps a pass's events in order."""
    name = bundle_name(inventory.bundle, inventory.instance)
    digest = hashlib.sha256(f"{name}|{now}|{transition.reason}|{transition.note}".encode())
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{name}.{digest.hexdigest()[:12]}", "namespace": NAMESPACE,
                         "labels": {INSTANCE_LABEL: inventory.instance,
                                    RECORD_LABEL: name[:63].strip(".-") or "bundle"}},
            "eventTime": now.replace("Z", f".{order:06d}Z") if now.endswith("Z") else now,
            "reportingController": CONTROLLER, "reportingInstance": f"gitgate-{inventory.instance}",
            "action": transition.action, "reason": transition.reason, "type": transition.type,
            "note": transition.note[:1024],
            "regarding": {"apiVersion": API_VERSION, "kind": KIND, "namespace": NAMESPACE,
                          "name": name, **({"uid": uid} if uid else {})}}
