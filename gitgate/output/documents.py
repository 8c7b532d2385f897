"""The envelope of every JSON document gitgate prints: `apiVersion` and `kind` first, like a
Kubernetes object, so scripts can tell them apart and the format can evolve by version
(docs/schema/gitgate.io_v1alpha1.json describes each kind)."""

from __future__ import annotations

from typing import Any

API_VERSION = "gitgate.io/v1alpha1"


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, **body}
