"""What Karmada did with a bundle, per member cluster: scheduled there, applied, healthy,
dispatch suspended, running the current template. Pure: (the bundle's objects, their
ResourceBindings, their templates) -> one `ClusterState` per cluster.

Where Karmada records it (observed on a real control plane, see ../shared/karmada-harness):
- `spec.clusters` of a binding: where it is scheduled; condition `Scheduled`.
- `spec.suspension`: copied from the policy; a suspended cluster receives no new template.
- `status.aggregatedStatus[]`, one item per cluster: `applied` (with `appliedMessage` when
  not), `health` and, for Deployments, ReplicaSets, DaemonSets and StatefulSets only,
  `status.resourceTemplateGeneration`: the template generation that cluster runs.
- Health: Karmada interprets it for Deployment, StatefulSet, ReplicaSet, DaemonSet, Service,
  Ingress, PersistentVolumeClaim, Pod and PodDisruptionBudget; every other kind is reported
  `Healthy` once applied (its work-status controller treats a kind without a health
  interpreter as healthy). gitgate takes Karmada's word and does not second-guess it.

Version: a cluster runs the `current` template when Karmada reports a template generation at
least the template's own; `behind` when lower, or when its Work does not carry the current
override policies of the object yet (`karmada.overridden`). Kinds without a reported generation are
`current` on a cluster that is applied, not suspended, and whose binding has seen the
template's latest resourceVersion; on a suspended cluster Karmada does not say which content
it holds, so they are `unknown` there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from enum import Enum, IntEnum, StrEnum
from typing import Any, TypedDict

from gitgate.karmada.binding import binding_name
from gitgate.karmada.bindingstatus import BindingStatus, Health, MemberRecord
from gitgate.model import Manifest, ObjectRef

__all__ = ["BindingKey", "ClusterState", "Dispatch", "Health", "MemberState", "Version",
           "binding_key", "dispatch_of", "propagated", "with_overrides_behind"]


class Version(StrEnum):
    CURRENT = "current"
    UNKNOWN = "unknown"
    BEHIND = "behind"


_HEALTH_RANK = {Health.HEALTHY: 0, Health.UNKNOWN: 1, Health.UNHEALTHY: 2}
_VERSION_RANK = {Version.CURRENT: 0, Version.UNKNOWN: 1, Version.BEHIND: 2}
# kinds whose member status carries `resourceTemplateGeneration` (Karmada's reflectstatus.go)
_GENERATION_REPORTED = {"Deployment", "ReplicaSet", "DaemonSet", "StatefulSet"}
BindingKey = tuple[str, str]  # (namespace, name); "" namespace for a ClusterResourceBinding


class Signal(TypedDict):
    """A field of `ClusterState` that its document carries as `key` (typed by `schema`, a
    JSON Schema), and shows in a per-cluster table's `column` ("" for none)."""

    key: str
    schema: dict[str, object]
    column: str


def _signal(key: str, schema: dict[str, object], description: str = "",
            column: str = "") -> Signal:
    return Signal(key=key, schema=schema | ({"description": description} if description
                                            else {}), column=column)


def _enum(kind: type[StrEnum]) -> dict[str, object]:
    return {"enum": [str(v) for v in kind]}


@dataclass(frozen=True, slots=True)
class ClusterState:
    """One bundle on one member cluster. The one record of a cluster's state: the fields
    with a `_signal` are its document (`as_dict`: `status -o json/yaml`, `/status`, the
    Bundle's status), its JSON Schema (`schema`, `clusterState` in
    docs/schema/gitgate.io_v1alpha1.json) and the columns of the per-cluster tables
    (`columns`: `status -o wide`, the bundle's page). A new signal is a field here."""

    name: str = field(metadata=_signal("name", {"type": "string"}))
    scheduled: bool = field(metadata=_signal(
        "scheduled", {"type": "boolean"}, "Karmada scheduled every object there",
        "SCHEDULED"))
    applied: bool = field(metadata=_signal(
        "applied", {"type": "boolean"}, "the member applied every object", "APPLIED"))
    health: Health = field(metadata=_signal(
        "health", _enum(Health), "the worst of its objects' health there", "HEALTH"))
    suspended: bool = field(metadata=_signal(
        "suspended", {"type": "boolean"}, "dispatch to it is suspended", "SUSPENDED"))
    version: Version = field(metadata=_signal(
        "version", _enum(Version), "whether it runs the current template", "VERSION"))
    message: str = field(default="", metadata=_signal(
        "message", {"type": "string"}, "the most actionable problem there (empty: none)"))
    apply_failed: bool = False  # a member refused an object (Karmada's appliedMessage)
    # since when every object of the bundle there reports itself ready (the latest of their
    # conditions' transition times); None when one does not say
    ready_since: datetime | None = None

    @property
    def ready(self) -> bool:
        """What `apply --wait` waits for on a cluster that is not suspended."""
        return (self.scheduled and self.applied and self.health is Health.HEALTHY
                and self.version is Version.CURRENT)

    def summary(self) -> str:
        """`Healthy, current` / `suspended, behind` / `not scheduled`: for progress lines."""
        if not self.scheduled:
            words = ["not scheduled"]
        elif not self.applied:
            words = ["not applied"]
        else:
            words = [str(self.health), str(self.version)]
        return ", ".join((["suspended"] if self.suspended else []) + words)

    def as_dict(self) -> dict[str, Any]:
        """Its document: every signal by its key (an enum as its text)."""
        return {f.metadata["key"]: _plain(getattr(self, f.name)) for f in _SIGNALS}

    def columns(self) -> list[tuple[str, Any]]:
        """The signals a per-cluster table shows, in order: (column heading, value)."""
        return [(f.metadata["column"], _plain(getattr(self, f.name))) for f in _COLUMNS]

    @staticmethod
    def headings() -> list[str]:
        return [f.metadata["column"] for f in _COLUMNS]

    @staticmethod
    def schema() -> dict[str, Any]:
        """The JSON Schema of its document."""
        return {"type": "object", "required": [f.metadata["key"] for f in _SIGNALS],
                "properties": {f.metadata["key"]: f.metadata["schema"] for f in _SIGNALS}}


_SIGNALS = tuple(f for f in fields(ClusterState) if "key" in f.metadata)
_COLUMNS = tuple(f for f in _SIGNALS if f.metadata["column"])


def _plain(value: object) -> Any:
    """A signal's value in a document: an enum as its text, anything else as it is."""
    return value.value if isinstance(value, Enum) else value


@dataclass(frozen=True)
class Dispatch:
    """A bundle as Karmada dispatched it: its clusters, and what holds it back everywhere
    (an object no policy propagates, say)."""

    clusters: tuple[ClusterState, ...] = ()
    message: str = ""
    propagated: int = 0  # objects of the bundle Karmada binds (Namespaces and policies not)

    @property
    def health(self) -> Health | None:
        """The worst over the clusters; None when it is placed nowhere."""
        if not self.clusters:
            return None
        return max((c.health for c in self.clusters), key=_HEALTH_RANK.__getitem__)

    def waiting_on(self) -> list[ClusterState]:
        """Clusters not suspended and not yet ready."""
        return [c for c in self.clusters if not c.suspended and not c.ready]


def propagated(ref: ObjectRef) -> bool:
    """Objects Karmada binds through a policy: not Namespaces (its namespace controller
    dispatches them) and not Karmada's own API objects (policies are never propagated)."""
    return not (ref.group == "" and ref.kind == "Namespace") and not (
        ref.group == "karmada.io" or ref.group.endswith(".karmada.io"))


def binding_key(ref: ObjectRef) -> BindingKey:
    return (ref.namespace, binding_name(ref.kind, ref.name))


class MemberState(IntEnum):
    """One object on one cluster, worst first: the order in which a cluster's message names
    its problems (the most actionable first)."""

    NOT_SCHEDULED = 0
    APPLY_FAILED = 1
    UNHEALTHY = 2
    NOT_APPLIED = 3
    HEALTH_UNKNOWN = 4
    BEHIND = 5
    READY = 6  # or: which template it runs is not known yet (a problem, but the mildest)


@dataclass(frozen=True)
class _Seen:
    """One object on one cluster."""

    state: MemberState
    applied: bool
    health: Health
    suspended: bool
    version: Version
    problem: str  # "" when it is scheduled, applied, healthy and current
    since: datetime | None = None  # the member's ready-since (`MemberRecord.ready_since`)

    @property
    def scheduled(self) -> bool:
        return self.state is not MemberState.NOT_SCHEDULED


def _version(member: MemberRecord, template: Manifest | None, binding: BindingStatus,
             suspended: bool) -> Version:
    generation = ((template or {}).get("metadata") or {}).get("generation")
    if member.template_generation is not None and isinstance(generation, int):
        return Version.CURRENT if member.template_generation >= generation else Version.BEHIND
    if suspended or template is None or not member.applied:
        return Version.UNKNOWN
    if template.get("kind") in _GENERATION_REPORTED:
        return Version.UNKNOWN  # its member status is not collected yet
    latest = (template.get("metadata") or {}).get("resourceVersion")
    seen = binding.seen_resource_version
    return Version.CURRENT if seen and seen == latest else Version.UNKNOWN


def _seen_on(ref: ObjectRef, cluster: str, binding: BindingStatus, template: Manifest | None,
             lag: str | None = None) -> _Seen:
    suspended = binding.suspended(cluster)
    if not binding.scheduled(cluster):
        why = binding.scheduling_refused or "Karmada has not scheduled it there"
        return _Seen(MemberState.NOT_SCHEDULED, False, Health.UNKNOWN, suspended,
                     Version.UNKNOWN,
                     f"{ref}: not scheduled on {cluster}: {why}")
    member = binding.members.get(cluster)
    if member is None or not member.applied:
        if member is not None and member.applied_message:
            why = member.applied_message
        elif suspended:
            why = "never dispatched (dispatch is suspended)"
        else:
            why = "not applied yet"
        health = member.health if member else Health.UNKNOWN
        state = (MemberState.APPLY_FAILED if member is not None and member.applied_message
                 else MemberState.UNHEALTHY if health is Health.UNHEALTHY
                 else MemberState.NOT_APPLIED)
        return _Seen(state, False, health, suspended, Version.UNKNOWN,
                     f"{ref} on {cluster}: {why}")
    version = _version(member, template, binding, suspended)
    if lag is not None:  # the template is current, but an override change is not there yet
        version = Version.BEHIND
    state, problem = MemberState.READY, ""
    if member.health is Health.UNHEALTHY:
        state, problem = MemberState.UNHEALTHY, f"{ref} is {member.health} on {cluster}"
    elif member.health is Health.UNKNOWN:
        state, problem = MemberState.HEALTH_UNKNOWN, f"{ref} is {member.health} on {cluster}"
    elif lag is not None:
        state, problem = MemberState.BEHIND, f"{ref}: {lag}"
    elif version is Version.BEHIND:
        latest = ((template or {}).get("metadata") or {}).get("generation")
        state, problem = MemberState.BEHIND, (
            f"{ref} on {cluster} runs template generation {member.template_generation}, "
            f"not {latest}")
    elif version is Version.UNKNOWN:
        problem = f"{ref} on {cluster}: which template it runs is not known yet"
    return _Seen(state, True, member.health, suspended, version, problem, member.ready_since)


def dispatch_of(objects: Iterable[ObjectRef], bindings: Mapping[BindingKey, BindingStatus],
                templates: Mapping[ObjectRef, Manifest],
                lags: Mapping[tuple[ObjectRef, str], str] | None = None) -> Dispatch:
    """Per cluster, the worst over the bundle's propagated objects. The clusters are those
    any of its bindings is scheduled on; an object without a binding is named in the message
    (nothing propagates it, or Karmada has not picked it up yet)."""
    refs = [r for r in objects if propagated(r)]
    found = [(r, bindings.get(binding_key(r))) for r in refs]
    unbound = [r for r, b in found if b is None]
    bound = [(r, b) for r, b in found if b is not None]
    names = sorted({c for _, b in bound for c in b.scheduled_on})
    message = ""
    if unbound:
        message = (f"{unbound[0]} has no ResourceBinding: no policy propagates it, or Karmada "
                   "has not picked it up yet")
        if len(unbound) > 1:
            message += f" (and {len(unbound) - 1} more)"
    clusters = []
    for cluster in names:
        seen = [_seen_on(ref, cluster, binding, templates.get(ref),
                         (lags or {}).get((ref, cluster)))
                for ref, binding in bound]
        problems = [s.problem for s in sorted(seen, key=lambda s: s.state) if s.problem]
        clusters.append(ClusterState(
            name=cluster,
            scheduled=all(s.scheduled for s in seen) and not unbound,
            applied=all(s.applied for s in seen) and not unbound,
            health=max((s.health for s in seen), key=_HEALTH_RANK.__getitem__,
                       default=Health.UNKNOWN) if not unbound else Health.UNKNOWN,
            suspended=any(s.suspended for s in seen),
            version=max((s.version for s in seen), key=_VERSION_RANK.__getitem__,
                        default=Version.UNKNOWN),
            message=problems[0] if problems else (message if unbound else ""),
            apply_failed=any(s.state is MemberState.APPLY_FAILED for s in seen),
            ready_since=_latest([s.since for s in seen]) if seen and not unbound else None))
    return Dispatch(tuple(clusters), message, len(refs))


def _latest(times: list[datetime | None]) -> datetime | None:
    """The latest of `times`; None when one of them is not known."""
    known = [t for t in times if t is not None]
    return max(known) if known and len(known) == len(times) else None


def with_overrides_behind(dispatch: Dispatch, behind: Iterable[str]) -> Dispatch:
    """`dispatch` with the clusters that run old overrides (`behind`; "*": all) marked
    `behind`, while their dispatch is suspended: Karmada renders the change into their Works
    but sends it only when the suspension lifts."""
    names = set(behind)
    if not names:
        return dispatch
    clusters = tuple(
        replace(c, version=Version.BEHIND, message=c.message or (
            f"an override change acting on it is not dispatched to {c.name}: dispatch there "
            "is suspended; it goes with the resume"))
        if c.suspended and (c.name in names or "*" in names) else c
        for c in dispatch.clusters)
    return replace(dispatch, clusters=clusters)
