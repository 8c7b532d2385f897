"""Plain-data builders for the pure stages."""

from __future__ import annotations

from gitgate.model import Bundle, BundleOptions, Source, SourceKind


def source(path: str = "apps/x", *, labels=None, pause=None, placement=None, name=None,
           kind: SourceKind = SourceKind.RAW) -> Source:
    options = BundleOptions(namespace="ns", labels=labels or {}, placement=placement)
    return Source(path, kind, options, name or path.replace("/", "-"), pause_reason=pause)


def bundle(name: str, *objects, labels=None, pause=None, placement=None, src=None) -> Bundle:
    src = src or source(name, labels=labels, pause=pause, placement=placement, name=name)
    return Bundle(name, src, tuple(objects), (), dict(labels or src.options.labels))


def cm(name: str, ns: str = "ns", labels=None, data=None) -> dict:
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def deployment(name: str, ns: str = "ns", *, configmaps=(), secrets=(), labels=None,
               pod_labels=None) -> dict:
    env_from = [{"configMapRef": {"name": c}} for c in configmaps]
    env_from += [{"secretRef": {"name": s}} for s in secrets]
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": pod_labels or {"app": name}},
                     "spec": {"containers": [{"name": name, "image": "img",
                                              "envFrom": env_from}]}}}}


def shown(ref: dict) -> str:
    """A document's object reference (`objectRef`) as gitgate's tables write it:
    `Kind.group namespace/name`."""
    kind = f"{ref['kind']}.{ref['group']}" if ref["group"] else ref["kind"]
    where = f"{ref['namespace']}/" if ref["namespace"] else ""
    return f"{kind} {where}{ref['name']}"
