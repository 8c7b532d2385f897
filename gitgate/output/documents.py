"""The envelope of every JSON document gitgate prints: `apiVersion` and `kind` first, like a
Kubernetes object, so scripts can tell them apart and the format can evolve by version
(docs/schema/gitgate.io_v1alpha1.json describes each kind)."""

from __future__ import annotations

from typing import Any

from gitgate.model import ObjectRef

API_VERSION = "gitgate.io/v1alpha1"


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, **body}


def object_ref(ref: ObjectRef, api_version: str = "") -> dict[str, str]:
    """The one shape of an object reference in every document (`objectRef` in the schema):
    group, kind, namespace ("" when cluster-scoped) and name, and the apiVersion where the
    document knows which version it means (what is rendered or recorded)."""
    out = {"group": ref.group, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}
    if api_version:
        out = {"apiVersion": api_version, **out}
    return out
