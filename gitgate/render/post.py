"""Pure post-processing of rendered objects: validation, default namespace, bundle label."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from gitgate.model import BUNDLE_LABEL, Manifest, bundle_from_label, bundle_label_value
from gitgate.model.hookmarks import generated_name
from gitgate.model.kindscope import BUILTIN_SCOPES, builtin_scope
from gitgate.model.ownership import claim_problem, identity_problem, reserved_problem

# Built-in (Kubernetes and Karmada) kinds that are cluster-scoped, by (group, kind)
CLUSTER_SCOPED: frozenset[tuple[str, str]] = frozenset(
    kind for kind, namespaced in BUILTIN_SCOPES.items() if not namespaced)


def group_of(manifest: Manifest) -> str:
    return str(manifest.get("apiVersion", "")).rpartition("/")[0]


def invalid_reason(document: object) -> str | None:
    """Why a rendered document is not a usable Kubernetes object, or None if it is."""
    if not isinstance(document, dict):
        return f"expected a mapping (a Kubernetes object), found {type(document).__name__}"
    missing = [f for f in ("apiVersion", "kind") if not isinstance(document.get(f), str)
               or not document.get(f)]
    meta = document.get("metadata")
    if not isinstance(meta, dict) or not (_text(meta.get("name")) or _text(meta.get(
            "generateName"))):
        missing.append("metadata.name (or metadata.generateName)")
    if missing:
        return f"object is missing {', '.join(missing)}"
    problem = identity_problem(document)
    if problem:
        assert isinstance(meta, dict)
        return f"{document['kind']} {meta.get('name') or meta.get('generateName')!r}: {problem}"
    return None


def ownership_problems(objects: Iterable[Manifest], bundle: str) -> list[str]:
    """One line per placed object of the source `bundle` that claims what it cannot own:
    gitgate's or Karmada's own state, gitgate's marks, or another bundle."""
    problems = []
    for obj in objects:
        why = reserved_problem(obj) or claim_problem(obj, bundle)
        if why:
            meta = obj["metadata"]
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            problems.append(f"{obj['kind']} {where}{meta['name']}: {why}")
    return problems


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def named_generated(objects: Iterable[Manifest]) -> list[Manifest]:
    """Objects with `generateName` and no name get a name from the prefix and their content,
    so that they can be told apart until bundling names them after the bundle's digest
    (`bundle.group.name_generated`). An object with both keeps its name, as the API server
    does."""
    out = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        prefix = meta.get("generateName")
        if "generateName" in meta and _text(meta.get("name")):  # the API server takes the name
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "generateName"}}
        elif _text(prefix):
            short = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
            obj = {**obj, "metadata": {**meta, "name": generated_name(str(prefix), "", short)}}
        out.append(obj)
    return out


def expand_lists(documents: Iterable[object]) -> list[object]:
    """`kind: List` (and `*List`) documents stand for their items."""
    out: list[object] = []
    for doc in documents:
        if (isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List")
                and isinstance(doc.get("items"), list) and str(doc.get("apiVersion")) == "v1"):
            out.extend(doc["items"])
        else:
            out.append(doc)
    return out


def crd_scopes(objects: Iterable[Manifest]) -> dict[tuple[str, str], bool]:
    """(group, kind) -> namespaced, for every CustomResourceDefinition among the objects that
    defines a kind Kubernetes or Karmada do not serve themselves (a repo's CRD never changes
    the scope of theirs)."""
    scopes: dict[tuple[str, str], bool] = {}
    for obj in objects:
        if obj.get("kind") != "CustomResourceDefinition":
            continue
        spec = obj.get("spec") or {}
        kind = (spec.get("names") or {}).get("kind")
        if (isinstance(kind, str) and isinstance(spec.get("group"), str)
                and builtin_scope(spec["group"], kind) is None):
            scopes[(spec["group"], kind)] = spec.get("scope", "Namespaced") == "Namespaced"
    return scopes


def is_namespaced(group: str, kind: str, crds: dict[tuple[str, str], bool]) -> bool | None:
    """True/False when known (`crds`: the API server's answers and the repo's CRDs, then the
    built-in table), None when the kind is unknown."""
    found = crds.get((group, kind))
    return found if found is not None else builtin_scope(group, kind)


def default_namespace(objects: Iterable[Manifest], namespace: str,
                      crds: dict[tuple[str, str], bool]) -> tuple[list[Manifest], list[str]]:
    """Give namespaced objects without a namespace the bundle's; drop it from cluster-scoped ones.

    Returns the new objects and one warning per unknown kind (treated as namespaced).
    """
    out: list[Manifest] = []
    warnings: list[str] = []
    for obj in objects:
        group, kind = group_of(obj), str(obj["kind"])
        namespaced = is_namespaced(group, kind, crds)
        meta = obj["metadata"]
        if namespaced is None:
            warnings.append(f"unknown kind {kind} ({obj['apiVersion']}) of {meta['name']}: "
                            "treated as namespaced; add its CRD to the repo to be sure")
            namespaced = True
        if namespaced and not meta.get("namespace"):
            obj = {**obj, "metadata": {**meta, "namespace": namespace}}
        elif not namespaced and "namespace" in meta:
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}
        out.append(obj)
    return out, warnings


def with_bundle_label(obj: Manifest, bundle: str) -> Manifest:
    """A new object and metadata with the label; the rest is shared with `obj` (objects are
    never changed in place once rendered: every later stage builds new ones). An object that
    has the label already is handed back as it is."""
    value = bundle_label_value(bundle)
    meta = dict(obj.get("metadata") or {})
    labels = meta.get("labels") or {}
    if labels.get(BUNDLE_LABEL) == value:
        return obj
    meta["labels"] = {**labels, BUNDLE_LABEL: value}
    return {**obj, "metadata": meta}


def labelled_early(objects: Iterable[Manifest], bundle: str, split: bool) -> list[Manifest]:
    """The objects of a source that is one bundle (`bundle`), labelled as grouping would
    label them, so that grouping finds them labelled and makes no copy of its own: a replica
    then holds each object twice (as rendered, as placed), not three times. A split source,
    an object that has the label already, and a name whose label value does not read back
    as the name (a long one, shortened) are left to grouping."""
    objects = list(objects)
    if split or bundle_from_label(bundle_label_value(bundle)) != bundle:
        return objects
    return [obj if BUNDLE_LABEL in ((obj.get("metadata") or {}).get("labels") or {})
            else with_bundle_label(obj, bundle) for obj in objects]


def redact_secret(obj: Manifest) -> Manifest:
    """A Secret with every value of `data` and `stringData` replaced by a short fingerprint, so
    that output shows which keys changed without showing what they hold."""
    if obj.get("kind") != "Secret" or group_of(obj) != "":
        return obj
    out = dict(obj)
    for key in ("data", "stringData"):
        if key not in obj:
            continue
        values = obj[key]
        if isinstance(values, dict):
            out[key] = {k: _fingerprint(v) for k, v in values.items()}
        else:  # not a mapping (the API server refuses it): still never shown
            out[key] = _fingerprint(values)
    return out


def _fingerprint(value: object) -> str:
    return "<redacted sha256:" + hashlib.sha256(str(value).encode()).hexdigest()[:12] + ">"
