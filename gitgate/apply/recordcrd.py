"""The Bundle CustomResourceDefinition gitgate writes when it is missing (and `deploy/`
installs), and whether an installed one is current."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from gitgate.apply.recordformat import GROUP, KIND
from gitgate.model import Manifest

CRD_NAME = f"bundles.{GROUP}"
SCHEMA_ANNOTATION = "gitgate.io/schema"  # on the CRD: a fingerprint of the spec gitgate writes


def bundle_crd() -> Manifest:
    """The CustomResourceDefinition gitgate creates when it is missing (and `deploy/`
    installs): printer columns for `kubectl get bundles.gitgate.io -A`."""
    ready = '.status.conditions[?(@.type=="Ready")]'
    columns = [
        {"name": "Verdict", "type": "string", "jsonPath": ".status.verdict"},
        {"name": "Ready", "type": "string", "jsonPath": f"{ready}.status"},
        {"name": "Clusters", "type": "string", "jsonPath": ".status.clustersReady",
         "description": "member clusters ready / scheduled"},
        {"name": "Revision", "type": "string", "jsonPath": ".status.revision",
         "description": "the revision live on Karmada (lastAppliedRevision)"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Reason", "type": "string", "priority": 1, "jsonPath": f"{ready}.reason"},
        {"name": "Source", "type": "string", "priority": 1, "jsonPath": ".spec.source"},
        {"name": "Repo", "type": "string", "priority": 1, "jsonPath": ".spec.repo",
         "description": "the repo the instance's bundles come from"},
    ]
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "bundle": {"type": "string"}, "instance": {"type": "string"},
            "source": {"type": "string"}, "digest": {"type": "string"},
            "repo": {"type": "string"}, "repoPath": {"type": "string"},
            "revision": {"type": "string"},  # what earlier records hold instead of digest
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "intent": {"type": "object", "properties": {  # `to_new_bundle`
                "revision": {"type": "string"},
                "ids": {"type": "array", "items": {"type": "string"}},
                "objects": {"type": "array", "items": {"type": "object", "properties": {
                    k: {"type": "string"} for k in (
                        "apiVersion", "kind", "namespace", "name", "hash")}}}}}}},
        "status": {**free, "properties": {
            "observedGeneration": {"type": "integer", "format": "int64"},
            "verdict": {"type": "string"}, "revision": {"type": "string"},
            "clustersReady": {"type": "string"},
            "conditions": {"type": "array", "items": {
                "type": "object", "required": ["type", "status"],
                "properties": {k: {"type": "string"} for k in (
                    "type", "status", "reason", "message", "lastTransitionTime")}}}}}}}
    spec = {"group": GROUP, "scope": "Namespaced",
            "names": {"kind": KIND, "listKind": f"{KIND}List", "plural": "bundles",
                      "singular": "bundle", "shortNames": ["ggb"], "categories": ["gitgate"]},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                          "subresources": {"status": {}}, "additionalPrinterColumns": columns,
                          "schema": {"openAPIV3Schema": schema}}]}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/managed-by": "gitgate"},
                         "annotations": {SCHEMA_ANNOTATION: _fingerprint(spec)}},
            "spec": spec}


def crd_current(found: Manifest) -> bool:
    """Whether an installed Bundle CRD is the one this gitgate writes (its fingerprint)."""
    annotations = (found.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(SCHEMA_ANNOTATION) == _our_fingerprint())


@functools.cache
def _our_fingerprint() -> str:
    """The fingerprint of the CRD this gitgate writes, worked out once per process (it is
    asked before every pass's first write)."""
    return str(bundle_crd()["metadata"]["annotations"][SCHEMA_ANNOTATION])


def _fingerprint(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
