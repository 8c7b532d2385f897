"""Read what Karmada did with gitgate's bundles: one list of ResourceBindings per namespace
(ClusterResourceBindings once), one list of templates per kind and namespace, never a GET per
object; then the pure `dispatch_of` per bundle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gitgate.apiserver.ports import Lister, list_metadata
from gitgate.apply.inventory import Inventory
from gitgate.bundle.selectors import policy_selects
from gitgate.errors import GitgateError, KubeError
from gitgate.karmada.binding import WORK_API_VERSION
from gitgate.karmada.bindingstatus import BINDING_ID_LABEL, BindingStatus, parse_binding
from gitgate.karmada.dispatch import (
    BindingKey,
    Dispatch,
    binding_key,
    dispatch_of,
    propagated,
    with_overrides_behind,
)
from gitgate.karmada.overridden import lag
from gitgate.karmada.policy import API_VERSION as POLICY_API_VERSION
from gitgate.karmada.progress import progress_of
from gitgate.karmada.syncsteps import Progress
from gitgate.model import Manifest, ObjectRef
from gitgate.model.ownership import EXECUTION_SPACE_PREFIX


@dataclass(frozen=True)
class Observation:
    """Per bundle what Karmada did with it; `error` when it could not be read (the API
    server is not Karmada, or refuses the lists)."""

    bundles: dict[str, Dispatch] = field(default_factory=dict)
    error: str = ""
    requests: int = 0


class ReadStopped(Exception):
    """A read of Karmada given up between two lists: what it was reading for moved."""


@dataclass(frozen=True)
class Stoppable:
    """A Lister that asks `stop` before each list and raises ReadStopped when it says so: a
    long read (hundreds of lists at thousands of bundles) that a newer question makes moot
    ends at the next list instead of running to its end."""

    cluster: Lister
    stop: Callable[[], bool]

    def list_objects(self, api_version: str, kind: str, namespace: str = "",
                     label_selector: str = "") -> list[Manifest]:
        self._go_on(kind, namespace)
        return self.cluster.list_objects(api_version, kind, namespace, label_selector)

    def list_metadata(self, api_version: str, kind: str, namespace: str = "",
                      label_selector: str = "") -> list[Manifest]:
        self._go_on(kind, namespace)
        return list_metadata(self.cluster, api_version, kind, namespace, label_selector)

    def _go_on(self, kind: str, namespace: str) -> None:
        if self.stop():
            raise ReadStopped(f"stopped before listing {kind} in {namespace or 'the cluster'}")


def _list(cluster: Lister, api_version: str, kind: str, namespace: str,
          label_selector: str = "", *, metadata: bool = False) -> list[Manifest]:
    try:
        if metadata:
            return list_metadata(cluster, api_version, kind, namespace, label_selector)
        return cluster.list_objects(api_version, kind, namespace, label_selector)
    except KubeError as exc:
        if exc.status != 404:
            raise
        if api_version == WORK_API_VERSION:
            raise GitgateError(f"the API server serves no {kind} ({WORK_API_VERSION}): is it "
                               "a Karmada control plane?") from None
        return []  # the kind is not served (any more): nothing of it exists


_SLIM_METADATA = ("name", "namespace", "labels", "generation", "resourceVersion")


def slim(template: Manifest) -> Manifest:
    """What is read of a template: its identity and labels (what Karmada's resource
    selectors match), its generation and resourceVersion (which template a cluster runs). A
    read of a whole share keeps no content (25,000 templates at 2,500 bundles)."""
    meta = template.get("metadata") or {}
    return {"apiVersion": template.get("apiVersion"), "kind": template.get("kind"),
            "metadata": {k: meta[k] for k in _SLIM_METADATA if k in meta}}


def _read(cluster: Lister, refs: dict[ObjectRef, str]
          ) -> tuple[dict[BindingKey, BindingStatus], dict[ObjectRef, Manifest], int]:
    """The bindings of `refs` (ref -> apiVersion) and their templates, kept `slim`: one list
    of bindings per namespace and one of templates per kind and namespace; of each list only
    what belongs to `refs` is parsed and kept (a namespace holds other bundles' objects too:
    another replica's share, another team's). Raises GitgateError."""
    requests = 0
    bindings: dict[BindingKey, BindingStatus] = {}
    templates: dict[ObjectRef, Manifest] = {}
    by_kind: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    wanted: set[BindingKey] = set()
    for ref, api_version in refs.items():
        by_kind[(api_version, ref.kind, ref.namespace)].add(ref.name)
        wanted.add(binding_key(ref))
    for namespace in sorted({ref.namespace for ref in refs}):
        kind = "ResourceBinding" if namespace else "ClusterResourceBinding"
        for binding in _list(cluster, WORK_API_VERSION, kind, namespace):
            key = (namespace, str((binding.get("metadata") or {}).get("name", "")))
            if key in wanted:
                bindings[key] = parse_binding(binding)
        requests += 1
    for (api_version, kind, namespace), names in sorted(by_kind.items()):
        # what `slim` keeps is metadata: the server sends no content (a ConfigMap's data)
        for template in _list(cluster, api_version, kind, namespace, metadata=True):
            ref = ObjectRef.of(template)
            if ref.name in names:
                templates[ref] = slim(template)
        requests += 1
    return bindings, templates, requests


@dataclass(frozen=True)
class KarmadaRead:
    """Karmada's bindings of some objects and the objects' live templates, read once."""

    bindings: dict[BindingKey, BindingStatus] = field(default_factory=dict)  # parsed once
    templates: dict[ObjectRef, Manifest] = field(default_factory=dict)  # `slim`
    requests: int = 0


def inventory_refs(inventories: Iterable[Inventory]) -> dict[ObjectRef, str]:
    """The objects of the inventories that Karmada binds (ref -> apiVersion)."""
    return {e.ref: e.api_version for inv in inventories for e in inv.entries
            if propagated(e.ref)}


def object_refs(objects: Iterable[Manifest]) -> dict[ObjectRef, str]:
    """The objects that Karmada binds (ref -> apiVersion)."""
    return {ref: str(o["apiVersion"]) for o in objects if propagated(ref := ObjectRef.of(o))}


def read_karmada(cluster: Lister, refs: dict[ObjectRef, str]) -> KarmadaRead:
    """The bindings and templates of `refs`. Raises GitgateError (with what could not be
    read)."""
    return KarmadaRead(*_read(cluster, refs))


def unreadable(exc: GitgateError) -> str:
    return f"cannot read Karmada's bindings: {exc.message}"


def dispatch_from(cluster: Lister, read: KarmadaRead,
                  inventories: Iterable[Inventory]) -> Observation:
    """Per bundle what Karmada did with it, from what `read` holds (the override policies
    and Works of overridden objects are read here)."""
    try:
        lags, more = _override_lags(cluster, read.bindings, read.templates)
    except GitgateError as exc:
        return Observation(error=unreadable(exc))
    return Observation({inv.bundle: with_overrides_behind(
        dispatch_of([e.ref for e in inv.entries if propagated(e.ref)], read.bindings,
                    read.templates, lags), inv.overrides_behind)
        for inv in inventories}, requests=read.requests + more)


def observe(cluster: Lister, inventories: Iterable[Inventory]) -> Observation:
    inventories = list(inventories)
    try:
        read = read_karmada(cluster, inventory_refs(inventories))
    except GitgateError as exc:
        return Observation(error=unreadable(exc))
    return dispatch_from(cluster, read, inventories)


def settled(dispatch: Dispatch) -> bool:
    """Nothing more to come from Karmada for this bundle until something is written again:
    every cluster that is not suspended runs it, current and healthy, and nothing holds it
    back."""
    return not dispatch.message and not dispatch.waiting_on()


def to_follow(previous: Observation | None, changed: set[str] | None,
              bundles: Iterable[str]) -> set[str] | None:
    """The bundles worth reading again after a pass: those it changed, those not seen yet and
    those Karmada had not settled when last read; None: read them all (no complete earlier
    read, or the pass's changes can act beyond their own bundles)."""
    if previous is None or previous.error or changed is None:
        return None
    return {name for name in bundles if name in changed or name not in previous.bundles
            or not settled(previous.bundles[name])}


def observe_following(cluster: Lister, inventories: Iterable[Inventory],
                      previous: Observation | None, changed: set[str] | None) -> Observation:
    """`observe`, reading only the bundles `to_follow` names; the others keep what
    `previous` says of them (bundles with no inventory any more are left out)."""
    inventories = list(inventories)
    following = to_follow(previous, changed, (inv.bundle for inv in inventories))
    if following is None or previous is None:
        return observe(cluster, inventories)
    fresh = observe(cluster, [inv for inv in inventories if inv.bundle in following])
    if fresh.error:
        return fresh
    kept = {inv.bundle: previous.bundles[inv.bundle] for inv in inventories
            if inv.bundle not in following}
    return Observation({**kept, **fresh.bundles}, requests=fresh.requests)


def _override_lags(cluster: Lister, bindings: dict[BindingKey, BindingStatus],
                   templates: dict[ObjectRef, Manifest]
                   ) -> tuple[dict[tuple[ObjectRef, str], str], int]:
    """Per (object, cluster), why that cluster does not run the object's current overrides
    yet: the live override policies that select the object (by what `slim` keeps), against
    what its Work on the cluster records. Works are read only for objects some override acts
    on."""
    lags: dict[tuple[ObjectRef, str], str] = {}
    if not templates:
        return lags, 0
    policies = _list(cluster, POLICY_API_VERSION, "ClusterOverridePolicy", "")
    policies += _list(cluster, POLICY_API_VERSION, "OverridePolicy", "")  # every namespace
    requests = 2
    if not policies:
        return lags, requests
    labels: dict[str, dict[str, str]] | None = None
    for ref, template in sorted(templates.items()):
        acting = [p for p in policies if policy_selects(p, template)]
        binding = bindings.get(binding_key(ref))
        if not acting or binding is None:
            continue
        binding_id = binding.binding_id
        if not binding_id:
            continue
        if labels is None:
            labels = _cluster_labels(cluster)
            requests += 1
        for member in binding.scheduled_on:
            works = _list(cluster, "work.karmada.io/v1alpha1", "Work",
                          f"{EXECUTION_SPACE_PREFIX}{member}", f"{BINDING_ID_LABEL}={binding_id}")
            requests += 1
            if works:
                why = lag(template, acting, member, labels.get(member), works[0])
                if why is not None:
                    lags[(ref, member)] = why
    return lags, requests


def _cluster_labels(cluster: Lister) -> dict[str, dict[str, str]]:
    return {str((c.get("metadata") or {}).get("name", "")):
            dict((c.get("metadata") or {}).get("labels") or {})
            for c in _list(cluster, "cluster.karmada.io/v1alpha1", "Cluster", "")}


def progress_from(read: KarmadaRead, objects: Iterable[tuple[Manifest, bool]]
                  ) -> dict[ObjectRef, Progress]:
    """How far each object (True: a hook) of syncing bundles got, from what `read` holds."""
    return progress_of({ObjectRef.of(o): hook for o, hook in objects}, read.bindings,
                       read.templates)
