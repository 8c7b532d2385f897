"""Read what Karmada did with gitgate's bundles: one list of ResourceBindings per namespace
(ClusterResourceBindings once), one list of templates per kind and namespace, never a GET per
object; then the pure `dispatch_of` per bundle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from gitgate.apply.inventory import Inventory
from gitgate.errors import GitgateError, KubeError
from gitgate.karmada.binding import WORK_API_VERSION
from gitgate.karmada.dispatch import BindingKey, Dispatch, dispatch_of, propagated
from gitgate.karmada.hooks import Progress
from gitgate.karmada.progress import progress_of
from gitgate.model import Manifest, ObjectRef


class Lister(Protocol):
    def list_objects(self, api_version: str, kind: str, namespace: str = "",
                     label_selector: str = "") -> list[Manifest]: ...


@dataclass(frozen=True)
class Observation:
    """Per bundle what Karmada did with it; `error` when it could not be read (the API
    server is not Karmada, or refuses the lists)."""

    bundles: dict[str, Dispatch] = field(default_factory=dict)
    error: str = ""
    requests: int = 0


def _list(cluster: Lister, api_version: str, kind: str, namespace: str) -> list[Manifest]:
    try:
        return cluster.list_objects(api_version, kind, namespace)
    except KubeError as exc:
        if exc.status != 404:
            raise
        if api_version == WORK_API_VERSION:
            raise GitgateError(f"the API server serves no {kind} ({WORK_API_VERSION}): is it "
                               "a Karmada control plane?") from None
        return []  # the kind is not served (any more): nothing of it exists


def _read(cluster: Lister, refs: dict[ObjectRef, str]
          ) -> tuple[dict[BindingKey, Manifest], dict[ObjectRef, Manifest], int]:
    """The bindings of the namespaces of `refs` (ref -> apiVersion) and their templates: one
    list per namespace and one per kind and namespace. Raises GitgateError."""
    requests = 0
    bindings: dict[BindingKey, Manifest] = {}
    templates: dict[ObjectRef, Manifest] = {}
    by_kind: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for ref, api_version in refs.items():
        by_kind[(api_version, ref.kind, ref.namespace)].add(ref.name)
    for namespace in sorted({ref.namespace for ref in refs}):
        kind = "ResourceBinding" if namespace else "ClusterResourceBinding"
        for binding in _list(cluster, WORK_API_VERSION, kind, namespace):
            meta = binding.get("metadata") or {}
            bindings[(namespace, str(meta.get("name", "")))] = binding
        requests += 1
    for (api_version, kind, namespace), names in sorted(by_kind.items()):
        for template in _list(cluster, api_version, kind, namespace):
            ref = ObjectRef.of(template)
            if ref.name in names:
                templates[ref] = template
        requests += 1
    return bindings, templates, requests


def observe(cluster: Lister, inventories: Iterable[Inventory]) -> Observation:
    inventories = list(inventories)
    wanted = [(inv, [(e.api_version, e.ref) for e in inv.entries if propagated(e.ref)])
              for inv in inventories]
    refs = {ref: api_version for _, pairs in wanted for api_version, ref in pairs}
    try:
        bindings, templates, requests = _read(cluster, refs)
    except GitgateError as exc:
        return Observation(error=f"cannot read Karmada's bindings: {exc.message}")
    return Observation({inv.bundle: dispatch_of([ref for _, ref in pairs], bindings, templates)
                        for inv, pairs in wanted}, requests=requests)


def observe_progress(cluster: Lister, objects: Iterable[tuple[Manifest, bool]]
                     ) -> dict[ObjectRef, Progress] | str:
    """How far each object (True: a hook) of syncing bundles got, or why it cannot be told."""
    wanted = {ObjectRef.of(o): (str(o["apiVersion"]), hook) for o, hook in objects}
    try:
        bindings, templates, _ = _read(cluster, {r: v for r, (v, _) in wanted.items()
                                                 if propagated(r)})
    except GitgateError as exc:
        return f"cannot read Karmada's bindings: {exc.message}"
    return progress_of({r: hook for r, (_, hook) in wanted.items()}, bindings, templates)
