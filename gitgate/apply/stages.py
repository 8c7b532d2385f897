"""Apply ordering, a pure table: CRDs and Namespaces first, then other cluster-scoped objects,
then namespaced templates, then Karmada policies; bundles in `dependsOn` order."""

from __future__ import annotations

from collections.abc import Iterable

from gitgate.model import Manifest, ObjectRef

STAGE_CRDS_AND_NAMESPACES = 0
STAGE_CLUSTER = 1
STAGE_NAMESPACED = 2
STAGE_POLICIES = 3
STAGES = (STAGE_CRDS_AND_NAMESPACES, STAGE_CLUSTER, STAGE_NAMESPACED, STAGE_POLICIES)

_FIRST = {("apiextensions.k8s.io", "CustomResourceDefinition"), ("", "Namespace")}
_POLICY_GROUPS = {"policy.karmada.io"}


def stage_of(obj: Manifest) -> int:
    ref = ObjectRef.of(obj)
    if (ref.group, ref.kind) in _FIRST:
        return STAGE_CRDS_AND_NAMESPACES
    if ref.group in _POLICY_GROUPS:
        return STAGE_POLICIES
    return STAGE_NAMESPACED if ref.namespace else STAGE_CLUSTER


def by_stage(objects: Iterable[Manifest]) -> dict[int, list[Manifest]]:
    staged: dict[int, list[Manifest]] = {stage: [] for stage in STAGES}
    for obj in sorted(objects, key=ObjectRef.of):
        staged[stage_of(obj)].append(obj)
    return staged


def bundle_order(depends_on: dict[str, tuple[str, ...]]) -> tuple[list[str], dict[str, str]]:
    """Bundles sorted so that each comes after what it depends on (then by name).
    Returns the order and, per bundle that cannot be ordered, why (unknown dependency or cycle).
    """
    problems: dict[str, str] = {}
    for name, needs in depends_on.items():
        missing = [n for n in needs if n not in depends_on]
        if missing:
            problems[name] = f"dependsOn names unknown bundle(s): {', '.join(missing)}"
    order: list[str] = []
    placed: set[str] = set()
    pending = sorted(depends_on)
    while pending:
        ready = [n for n in pending if all(d in placed or d not in depends_on
                                           for d in depends_on[n])]
        if not ready:
            for name in pending:
                problems[name] = "dependsOn forms a cycle: " + " -> ".join(pending)
            order += pending
            break
        for name in ready:
            order.append(name)
            placed.add(name)
        pending = [n for n in pending if n not in placed]
    return order, problems


def prune_order(objects: Iterable[Manifest]) -> list[Manifest]:
    """Deletes go the other way round: policies first, CRDs and Namespaces last."""
    return sorted(objects, key=lambda o: (-stage_of(o), ObjectRef.of(o)))
