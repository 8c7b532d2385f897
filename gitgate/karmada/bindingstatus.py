"""Karmada's ResourceBinding, parsed once into typed records: where it is scheduled, what
its suspension stops, and per member cluster what Karmada aggregated (applied or why not,
health, the template generation that member runs, the member's reflected status). Dispatch
(`karmada.dispatch`), hook progress (`karmada.progress`), suspension confirmation
(`apply.suspension`) and the override lag all read these records, never the binding's
fields. Pure.

Where Karmada records it (observed on a real control plane, see ../shared/karmada-harness):
`spec.clusters[].name` (scheduled), the `Scheduled` condition, `spec.suspension` (copied
from the policy), `spec.resource.resourceVersion` (the template version the binding has
seen), `status.aggregatedStatus[]` (one item per member: `applied`, `appliedMessage`,
`health`, `status`, `status.resourceTemplateGeneration`) and the label
`resourcebinding.karmada.io/permanent-id`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from gitgate.model import Manifest

BINDING_ID_LABEL = "resourcebinding.karmada.io/permanent-id"


class Health(StrEnum):
    HEALTHY = "Healthy"
    UNKNOWN = "Unknown"
    UNHEALTHY = "Unhealthy"


_HEALTHS = {str(h) for h in Health}


@dataclass(frozen=True, slots=True)  # one per binding and member: 50,000 at 5,000 bundles
class MemberRecord:
    """What a binding's aggregated status says of one member cluster."""

    cluster: str
    applied: bool = False
    applied_message: str = ""  # why the member refused the object ("" when it did not)
    health: Health = Health.UNKNOWN
    template_generation: int | None = None  # the template generation the member runs
    status: Mapping[str, Any] = field(default_factory=dict)  # the member's reflected status
    # since when the member's object says it is ready: the lastTransitionTime of a True
    # `Ready` or `Available` condition in its reflected status (Karmada reflects one for
    # kinds whose whole status it collects, or through a customized interpreter)
    ready_since: datetime | None = None


# the usual binding (nowhere suspended, no member reported yet) holds no empty set and dict
# of its own: a view of 10,000 bindings would hold 10,000 of each
_NONE: frozenset[str] = frozenset()
_NO_MEMBERS: Mapping[str, MemberRecord] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class BindingStatus:
    scheduled_on: tuple[str, ...] = ()
    scheduling_refused: str | None = None  # the Scheduled condition's message when not True
    suspended_everywhere: bool = False
    suspended_on: frozenset[str] = frozenset()
    seen_resource_version: str = ""  # of the template, as the binding last saw it
    binding_id: str = ""
    members: Mapping[str, MemberRecord] = field(default_factory=dict)

    def suspended(self, cluster: str) -> bool:
        return self.suspended_everywhere or cluster in self.suspended_on

    def scheduled(self, cluster: str) -> bool:
        return self.scheduling_refused is None and cluster in self.scheduled_on

    def suspension(self) -> Manifest | None:
        """The dispatching part of `spec.suspension`, as gitgate writes it into a policy."""
        if self.suspended_everywhere:
            return {"dispatching": True}
        if self.suspended_on:
            return {"dispatchingOnClusters": {"clusterNames": sorted(self.suspended_on)}}
        return None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


READY_CONDITIONS = ("Ready", "Available")
# the ready-since of a member that reflects no status (a kind Karmada interprets no health
# for: Healthy once applied): ready since it was applied, that is since its wave's release
APPLIED = datetime.min.replace(tzinfo=UTC)


def ready_since(status: Mapping[str, Any]) -> datetime | None:
    """When the reflected status's `Ready` (else `Available`) condition last turned True;
    None when neither is True or says when."""
    found = {str(c.get("type")): c for c in _list(status.get("conditions"))
             if isinstance(c, dict)}
    for kind in READY_CONDITIONS:
        condition = found.get(kind)
        if condition is None:
            continue
        if condition.get("status") != "True":
            return None
        try:
            moment = datetime.fromisoformat(str(condition.get("lastTransitionTime") or "")
                                            .replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment if moment.tzinfo is not None else None
    return None


def _member(item: dict[str, Any]) -> MemberRecord:
    status = _dict(item.get("status"))
    generation = status.get("resourceTemplateGeneration")
    health = item.get("health")
    return MemberRecord(
        cluster=str(item.get("clusterName", "")), applied=bool(item.get("applied")),
        applied_message=str(item.get("appliedMessage") or ""),
        health=Health(health) if health in _HEALTHS else Health.UNKNOWN,
        template_generation=generation if isinstance(generation, int) else None,
        status=status, ready_since=ready_since(status) if status else APPLIED)


def parse_binding(binding: Manifest) -> BindingStatus:
    """The binding's typed record (fields Karmada has not written yet read as absent)."""
    spec, status = _dict(binding.get("spec")), _dict(binding.get("status"))
    scheduled = next((c for c in _list(status.get("conditions"))
                      if isinstance(c, dict) and c.get("type") == "Scheduled"), None)
    refused = None
    if scheduled is not None and scheduled.get("status") != "True":
        refused = str(scheduled.get("message") or "")
    suspension = _dict(spec.get("suspension"))
    named = _list(_dict(suspension.get("dispatchingOnClusters")).get("clusterNames"))
    members = [_member(i) for i in _list(status.get("aggregatedStatus")) if isinstance(i, dict)]
    return BindingStatus(
        scheduled_on=tuple(str(c.get("name")) for c in _list(spec.get("clusters"))
                           if isinstance(c, dict) and c.get("name")),
        scheduling_refused=refused,
        suspended_everywhere=bool(suspension.get("dispatching")),
        suspended_on=frozenset(str(n) for n in named) if named else _NONE,
        seen_resource_version=str(_dict(spec.get("resource")).get("resourceVersion") or ""),
        binding_id=str(_dict(_dict(binding.get("metadata")).get("labels")).get(
            BINDING_ID_LABEL) or ""),
        members={m.cluster: m for m in members} if members else _NO_MEMBERS)
