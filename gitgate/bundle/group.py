"""Group rendered objects into application bundles. Pure."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from gitgate.bundle import deps
from gitgate.model import (
    BUNDLE_LABEL,
    Bundle,
    Manifest,
    ObjectRef,
    RenderedSource,
    bundle_from_label,
)
from gitgate.render.post import with_bundle_label


def bundle_digest(objects: Iterable[Manifest]) -> str:
    """A stable sha256 of a bundle's rendered objects (order and key order do not matter)."""
    ordered = sorted(objects, key=lambda o: ObjectRef.of(o))
    canonical = json.dumps(ordered, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _label_override(obj: Manifest) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(BUNDLE_LABEL)
    return bundle_from_label(value) if isinstance(value, str) and value else None


def _single(owners: set[str]) -> str | None:
    return next(iter(owners)) if len(owners) == 1 else None


def split_by_app(base: str, objects: list[Manifest]) -> dict[ObjectRef, str]:
    """Assign each object a bundle name: `<base>/<workload>` for workloads and what follows them
    (only when exactly one app uses it), `<base>` for the rest."""
    assignment: dict[ObjectRef, str] = {}
    workloads = [o for o in objects if deps.is_workload(o)]
    for workload in workloads:
        assignment[ObjectRef.of(workload)] = f"{base}/{workload['metadata']['name']}"
    by_ref = {ObjectRef.of(o): o for o in objects}
    users: dict[ObjectRef, set[str]] = {}
    present = set(by_ref)
    for workload in workloads:
        app = assignment[ObjectRef.of(workload)]
        for ref in deps.dependency_refs(workload, present):
            users.setdefault(ref, set()).add(app)
        for obj in deps.exposing(workload, objects):
            users.setdefault(ObjectRef.of(obj), set()).add(app)
    for ref, apps in users.items():
        if ref not in assignment and _single(apps):
            assignment[ref] = _single(apps)  # type: ignore[assignment]
    for ref, obj in by_ref.items():
        if obj.get("kind") != "Ingress" or ref in assignment:
            continue
        apps = {assignment.get(ObjectRef("", "Service", ref.namespace, name), base)
                for name in deps.ingress_services(obj)}
        if _single(apps):
            assignment[ref] = _single(apps)  # type: ignore[assignment]
    return {ref: assignment.get(ref, base) for ref in by_ref}


def group_source(rendered: RenderedSource) -> list[Bundle]:
    """One bundle per source, or one per application with `split: app`.
    A `gitgate.io/bundle` label on an object moves it to the named bundle."""
    source = rendered.source
    base = source.bundle_name
    labels = dict(source.options.labels)
    if rendered.failed:
        return [Bundle(base, source, (), rendered.problems, labels)]
    objects = list(rendered.objects)
    if source.options.split == "app":
        names = split_by_app(base, objects)
    else:
        names = {ObjectRef.of(o): base for o in objects}
    members: dict[str, list[Manifest]] = {}
    for obj in objects:
        name = _label_override(obj) or names[ObjectRef.of(obj)]
        members.setdefault(name, []).append(with_bundle_label(obj, name))
    if not members:
        members[base] = []
    return [Bundle(name, source, tuple(sorted(objs, key=ObjectRef.of)), (), labels)
            for name, objs in sorted(members.items())]


def group_all(rendered: Iterable[RenderedSource]) -> list[Bundle]:
    bundles = [b for r in rendered for b in group_source(r)]
    return sorted(bundles, key=lambda b: b.name)
