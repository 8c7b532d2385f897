"""An in-memory `ClusterPort` for the engine's decisions: it stores what is applied, answers
reads and label-selected lists, and records every call in order. It is not an API server (no
defaulting, no field ownership); the integration suite's emulator is, over HTTP."""

from __future__ import annotations

import copy
import time

from gitgate.apiserver.changeset import Applied
from gitgate.errors import KubeError
from gitgate.model import FIELD_MANAGER, Manifest, ObjectRef

Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


def _key(api_version: str, kind: str, namespace: str, name: str) -> Key:
    return api_version, kind, namespace or "", name


def _key_of(obj: Manifest) -> Key:
    meta = obj["metadata"]
    return _key(obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def _matches(term: str, labels: dict[str, str]) -> bool:
    """One label selector term: `k=v` (or `==`), `k!=v`, `k` (exists), `!k` (absent)."""
    if "!=" in term:
        label, value = term.split("!=", 1)
        return labels.get(label) != value
    if "=" in term:
        label, value = term.replace("==", "=").split("=", 1)
        return labels.get(label) == value
    if term.startswith("!"):
        return term[1:] not in labels
    return term in labels


class MemoryCluster:
    def __init__(self, refuse: tuple[str, ...] = (), latency: float = 0.0):
        self.latency = latency  # seconds each apply takes, so concurrent writes overlap
        self.objects: dict[Key, Manifest] = {}
        self.calls: list[tuple[str, str]] = []  # (verb, "Kind ns/name")
        self.refuse = set(refuse)  # object names whose apply the "server" refuses

    def writes(self, verb: str = "apply") -> list[str]:
        """Objects written with `verb`, in order, leaving out gitgate's own inventories (and their
        namespace)."""
        return [what for v, what in self.calls
                if v == verb and not what.startswith((
                    "Bundle.gitgate.io gitgate-system/", "Namespace gitgate-system",
                    "Event.events.k8s.io gitgate-system/",
                    "CustomResourceDefinition.apiextensions.k8s.io bundles.gitgate.io"))]

    def apply(self, obj: Manifest, *, dry_run: bool = False, force: bool = False,
              manager: str = FIELD_MANAGER, subresource: str = "") -> Applied:
        """A `status` subresource write changes the status alone (of an object that must
        exist); a write to the object keeps the status it had."""
        ref = ObjectRef.of(obj)
        self.calls.append(("apply", str(ref) + (f" {subresource}" if subresource else "")))
        if self.latency:
            time.sleep(self.latency)
        if ref.name in self.refuse:
            raise KubeError(f"{ref}: refused by the test", status=500)
        key = _key_of(obj)
        created = key not in self.objects
        if subresource and created:
            raise KubeError(f"{ref}: not found", status=404)
        stored = copy.deepcopy(obj)
        if subresource:  # each writer's fields beside the others' (at the status's top level)
            stored = {**self.objects[key], "status": {
                **(self.objects[key].get("status") or {}), **(stored.get("status") or {})}}
        elif not created and "status" in self.objects[key]:
            stored["status"] = self.objects[key]["status"]
        if not dry_run:
            self.objects[key] = stored
        return Applied(stored, created)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Manifest | None:
        self.calls.append(("get", f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"))
        found = self.objects.get(_key(api_version, kind, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def list_objects(self, api_version: str, kind: str, namespace: str = "",
                     label_selector: str = "") -> list[Manifest]:
        self.calls.append(("list", f"{kind} {namespace}"))
        terms = [part.strip() for part in label_selector.split(",") if part.strip()]
        return [copy.deepcopy(obj) for (version, k, ns, _), obj in sorted(self.objects.items())
                if (version, k) == (api_version, kind) and (not namespace or ns == namespace)
                and all(_matches(term, obj["metadata"].get("labels") or {}) for term in terms)]

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> bool:
        self.calls.append(("delete", f"{kind} {namespace}/{name}" if namespace else
                                     f"{kind} {name}"))
        return self.objects.pop(_key(api_version, kind, namespace, name), None) is not None

    def scope_of(self, api_version: str, kind: str) -> bool | None:
        return None  # no discovery: the repo's own knowledge decides

    def wait_established(self, crd_names: list[str], timeout: float = 60.0) -> list[str]:
        return []
