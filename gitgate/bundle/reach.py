"""What reaches a live object that its bundle no longer renders, known only by its record's
entry: the labels it was written with, what it uses when it is a workload, and whether an
acting object (an override policy, an autoscaler, a rebalancer, an interpreter
customization) may act on it. Pure functions; what is unknown is taken to reach (a freeze
fails closed).

An entry keeps an object's labels but gitgate's own bundle and instance labels, which its
record implies (`live_labels` puts them back), and a workload's uses as `Kind/name`
strings in its own namespace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitgate.bundle.deps import is_workload, used_refs
from gitgate.bundle.selectors import (
    CLUSTER_WIDE_KINDS,
    GROUP,
    INTERPRETER,
    OVERRIDE_KINDS,
    REBALANCER,
    SCALERS,
    is_acting,
    is_override,
    is_propagation,
    label_selector_matches,
    selectors_of,
)
from gitgate.model import BUNDLE_LABEL, Manifest, ObjectRef, bundle_label_value
from gitgate.model.ownership import INSTANCE_LABEL
from gitgate.model.shared import shared

OWN_LABELS = frozenset({BUNDLE_LABEL, INSTANCE_LABEL})
Labels = tuple[tuple[str, str], ...]
_NONE: Labels = ()


def recorded_facts(obj: Manifest) -> tuple[Labels, tuple[str, ...] | None]:
    """What a record's entry keeps of an object: its labels but gitgate's own, and, for a
    workload, what it uses (None for any other kind)."""
    labels = (obj.get("metadata") or {}).get("labels")
    kept = tuple(sorted((shared(str(k)), shared(str(v))) for k, v in labels.items()
                        if k not in OWN_LABELS)) if isinstance(labels, dict) else ()
    uses = (tuple(sorted(f"{kind}/{name}" for kind, name in used_refs(obj)))
            if is_workload(obj) else None)
    return kept or _NONE, uses


def live_labels(labels: Labels | None, bundle: str, instance: str) -> dict[str, str] | None:
    """The labels an entry's object has live, gitgate's own included (None: unknown)."""
    if labels is None:
        return None
    return {**dict(labels), BUNDLE_LABEL: bundle_label_value(bundle), INSTANCE_LABEL: instance}


def used_by(ref: ObjectRef, uses: tuple[str, ...]) -> set[ObjectRef]:
    """The objects a recorded workload uses, from its entry's `uses`."""
    out = set()
    for text in uses:
        kind, _, name = text.partition("/")
        if kind and name:
            out.add(ObjectRef("", kind, ref.namespace, name))
    return out


ACTING_KINDS = frozenset({(GROUP, kind) for kind in OVERRIDE_KINDS} | SCALERS
                         | {REBALANCER, INTERPRETER})


def acting_ref(ref: ObjectRef) -> bool:
    """Whether the object is of a kind that acts on others (`selectors.is_acting`)."""
    return (ref.group, ref.kind) in ACTING_KINDS


USED_KINDS = frozenset({"ConfigMap", "Secret", "PersistentVolumeClaim", "ServiceAccount"})


def may_use(workload: ObjectRef, ref: ObjectRef) -> bool:
    """Whether a workload whose uses are unknown may use `ref` (a core ConfigMap, Secret,
    PVC or ServiceAccount in its namespace)."""
    return (not ref.group and ref.kind in USED_KINDS and bool(workload.namespace)
            and ref.namespace == workload.namespace)


def _selector_reaches(selector: Any, api_version: str | None, ref: ObjectRef,
                      labels: Mapping[str, str] | None) -> bool:
    if not isinstance(selector, dict):
        return False
    wanted = str(selector.get("apiVersion") or "")
    if (wanted != api_version if api_version is not None
            else wanted.rpartition("/")[0] != ref.group):
        return False
    if selector.get("kind") != ref.kind:
        return False
    if selector.get("namespace") and selector["namespace"] != ref.namespace:
        return False
    if selector.get("name"):
        return bool(selector["name"] == ref.name)
    if selector.get("labelSelector") is None:
        return True
    return labels is None or label_selector_matches(selector["labelSelector"], dict(labels))


def reaches(actor: Manifest, ref: ObjectRef, api_version: str | None,
            labels: Mapping[str, str] | None) -> bool:
    """Whether `actor` (an acting object, or a propagation policy) acts, or may act, on the
    live object `ref` (Karmada's selector rules, `bundle.selectors`): with its apiVersion
    unknown any version of its group is taken to match, with its labels unknown any label
    selector."""
    if not (is_acting(actor) or is_propagation(actor)) or ref.group == "karmada.io" or (
            ref.group.endswith(".karmada.io")):
        return False
    if actor.get("kind") not in CLUSTER_WIDE_KINDS:
        meta = actor.get("metadata")
        namespace = (meta.get("namespace") if isinstance(meta, dict) else None) or ""
        if not namespace or namespace != ref.namespace:
            return False
    selectors = selectors_of(actor)
    if not selectors:
        return is_override(actor)
    return any(_selector_reaches(s, api_version, ref, labels) for s in selectors)
