"""Apply ordering, a pure table.

An open bundle: Namespaces and CRDs first, then other cluster-scoped objects, then namespaced
templates, then Karmada policies (so that a lifted suspension is lifted only after every
template is written). A bundle being suspended: its Namespaces, then its PropagationPolicies
carrying the suspension (which gitgate waits to see in Karmada's bindings), and only then its
CRDs and templates; Karmada dispatches a template written before the suspension. Stages are
global: every bundle's objects of a stage go before any bundle's of the next; bundles keep
`dependsOn` order inside a stage. A bundle's first write sends its own policies before its
templates (`apply.writes`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from gitgate.model import Manifest, ObjectRef

STAGE_NAMESPACES = 0  # Namespaces, and CRDs of bundles not being suspended
# PropagationPolicies of bundles being suspended, then confirmed; and a new bundle's own
# policies (`apply.writes`: Karmada claims its templates as they arrive)
STAGE_SUSPENSION = 1
STAGE_SUSPENDED_CRDS = 2  # CRDs of bundles being suspended, once their suspension holds
STAGE_CLUSTER = 3
STAGE_NAMESPACED = 4
STAGE_POLICIES = 5
STAGES = (STAGE_NAMESPACES, STAGE_SUSPENSION, STAGE_SUSPENDED_CRDS, STAGE_CLUSTER,
          STAGE_NAMESPACED, STAGE_POLICIES)

_CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
_NAMESPACE = ("", "Namespace")
_POLICY_GROUPS = {"policy.karmada.io"}
_PROPAGATION = {"PropagationPolicy", "ClusterPropagationPolicy"}


def stage_of(obj: Manifest, *, suspending: bool = False) -> int:
    ref = ObjectRef.of(obj)
    if (ref.group, ref.kind) == _NAMESPACE:
        return STAGE_NAMESPACES
    if (ref.group, ref.kind) == _CRD:
        return STAGE_SUSPENDED_CRDS if suspending else STAGE_NAMESPACES
    if ref.group in _POLICY_GROUPS:
        return STAGE_SUSPENSION if suspending and ref.kind in _PROPAGATION else STAGE_POLICIES
    return STAGE_NAMESPACED if ref.namespace else STAGE_CLUSTER


def by_stage(objects: Iterable[Manifest], *,
             suspending: bool = False) -> dict[int, list[Manifest]]:
    staged: dict[int, list[Manifest]] = {stage: [] for stage in STAGES}
    for obj in sorted(objects, key=ObjectRef.of):
        staged[stage_of(obj, suspending=suspending)].append(obj)
    return staged


def bundle_order(depends_on: dict[str, tuple[str, ...]],
                 elsewhere: Collection[str] = ()) -> tuple[list[str], dict[str, str]]:
    """Bundles sorted so that each comes after what it depends on (then by name).
    Returns the order and, per bundle that cannot be ordered, why (unknown dependency or cycle).
    `elsewhere`: the repo's bundles this pass does not write (another replica's shard, or
    outside `--bundle`): known, and not ordered here."""
    problems: dict[str, str] = {}
    for name, needs in depends_on.items():
        missing = [n for n in needs if n not in depends_on and n not in elsewhere]
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
