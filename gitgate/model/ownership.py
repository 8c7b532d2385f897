"""What a repo object may claim. Pure: a rendered object in, a reason it is refused (or None)
out. One repo is shared by many teams, so an object may not name a Kubernetes path segment it
cannot own, carry gitgate's own marks, or stand for gitgate's or Karmada's own state."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitgate.model.labels import BUNDLE_LABEL, bundle_from_label, bundle_label_value
from gitgate.model.objects import Manifest

SYSTEM_NAMESPACE = "gitgate-system"  # inventories and the Lease live here
INVENTORY_LABEL = "gitgate.io/inventory"
INSTANCE_LABEL = "gitgate.io/instance"
DEFAULT_INSTANCE = "default"  # the gitgate of an API server that runs one
# karmada.policy.policy_name: the default instance's generated policies, and another's
GENERATED_POLICY_PREFIXES = ("gitgate-", "gitgate.")
GITGATE_KEYS = "gitgate.io/"
PAUSED_LABEL = "gitgate.io/paused"
# the gitgate.io/ keys a repo may write (everything else under gitgate.io/ is gitgate's)
REPO_LABELS = frozenset({BUNDLE_LABEL, PAUSED_LABEL})
REPO_ANNOTATIONS = frozenset({"gitgate.io/prune", "gitgate.io/recreate"})
# Karmada's own dispatch records: writing one would reach members past every hold and
# suspension, so no repo object may be one, or live where Karmada keeps them
KARMADA_STATE = frozenset({("work.karmada.io", "Work"), ("work.karmada.io", "ResourceBinding"),
                           ("work.karmada.io", "ClusterResourceBinding")})
EXECUTION_SPACE_PREFIX = "karmada-es-"
# CRDs of these groups are Karmada's and gitgate's own API: a repo cannot redefine them
RESERVED_CRD_GROUPS = ("karmada.io", "gitgate.io")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# kinds whose names the API server checks as DNS-1123 labels (63 characters, no dots)
LABEL_NAMED = frozenset({("", "Namespace"), ("", "Service")})
# kinds whose names are only path segments (no '/', no '%', not '.' or '..')
SEGMENT_NAMED_GROUPS = frozenset({"rbac.authorization.k8s.io"})
# built-in groups whose other kinds have DNS-1123 subdomain names
SUBDOMAIN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "storage.k8s.io",
    "coordination.k8s.io", "discovery.k8s.io", "scheduling.k8s.io", "node.k8s.io",
    "apiextensions.k8s.io", "admissionregistration.k8s.io", "certificates.k8s.io"})


def _group(obj: Manifest) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def segment_problem(value: str) -> str | None:
    """Why `value` cannot be one segment of an API path (the API server's own minimum)."""
    if value in (".", ".."):
        return "may not be '.' or '..'"
    for bad in ("/", "%"):
        if bad in value:
            return f"may not contain {bad!r}"
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in value):
        return "may not contain control characters"
    return None


def name_problem(group: str, kind: str, name: str) -> str | None:
    """Why `name` is not a valid metadata.name for (group, kind), as the API server checks it."""
    problem = segment_problem(name)
    if problem:
        return problem
    if len(name) > 253:
        return "must be at most 253 characters"
    if (group, kind) in LABEL_NAMED:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return ("must be a DNS-1123 label (lowercase letters, digits and '-', starting and "
                    "ending with a letter or digit, at most 63 characters)")
    elif group in SUBDOMAIN_GROUPS and not _DNS_SUBDOMAIN.match(name):
        return ("must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting "
                "and ending with a letter or digit)")
    return None


def namespace_problem(namespace: str) -> str | None:
    if len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        return ("must be a DNS-1123 label (lowercase letters, digits and '-', starting and "
                "ending with a letter or digit, at most 63 characters)")
    return None


_API_VERSION = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                          r"[a-z]([-a-z0-9]*[a-z0-9])?$")  # a CRD version is a DNS-1035 label


def api_version_problem(api_version: str) -> str | None:
    if not _API_VERSION.match(api_version):
        return "is not an API version (`v1`, or a group and a version such as `apps/v1`)"
    return None


def identity_problem(obj: Manifest) -> str | None:
    """Why an object's apiVersion, kind, name, generateName or namespace could not be sent as
    it is (each becomes a segment of a URL path), or None."""
    meta = obj.get("metadata") or {}
    group, kind = _group(obj), str(obj.get("kind", ""))
    problem = api_version_problem(str(obj.get("apiVersion", "")))
    if problem:
        return f"apiVersion {obj.get('apiVersion')!r} {problem}"
    if not kind.isidentifier() or not kind.isascii():
        return f"kind {kind!r} is not a Kubernetes kind"
    name, prefix, namespace = meta.get("name"), meta.get("generateName"), meta.get("namespace")
    if isinstance(name, str) and name:
        problem = name_problem(group, kind, name)
        if problem:
            return f"metadata.name {name!r} {problem}"
    elif isinstance(prefix, str) and prefix:
        problem = name_problem(group, kind, prefix.rstrip("-") + "-x")
        if problem:
            return f"metadata.generateName {prefix!r} {problem}"
    if namespace is not None:
        if not isinstance(namespace, str):
            return "metadata.namespace must be a string"
        problem = namespace_problem(namespace) if namespace else None
        if problem:
            return f"metadata.namespace {namespace!r} {problem}"
    return None


def state_problem(obj: Manifest) -> str | None:
    """Why an object is gitgate's or Karmada's own state (gitgate's namespace and what is in
    it, Karmada's dispatch records and execution namespaces), or None. Prune never deletes
    such an object, whatever an inventory says."""
    meta = obj.get("metadata") or {}
    group, kind = _group(obj), str(obj.get("kind", ""))
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace") or "")
    where = namespace or (name if (group, kind) == ("", "Namespace") else "")
    if where == SYSTEM_NAMESPACE:
        return (f"the namespace {SYSTEM_NAMESPACE} is gitgate's own (its Bundle records and "
                "Lease): no repo object may be it or live in it")
    if where.startswith(EXECUTION_SPACE_PREFIX):
        return (f"{where} is a Karmada execution namespace ({EXECUTION_SPACE_PREFIX}*): what is "
                "written there reaches a member cluster directly, past every gate")
    if (group, kind) in KARMADA_STATE:
        return (f"a {kind} is Karmada's own dispatch record: written from the repo it would "
                "reach members past every gate; let Karmada make it from a template and a "
                "policy")
    if (group == "gitgate.io" or group.endswith(".gitgate.io")) and kind != "Gate":
        return (f"the API group {group} is gitgate's own (its Bundle records): no repo object "
                "may be one of its kinds, in any namespace")
    return None


def reserved_problem(obj: Manifest) -> str | None:
    """Why a placed repo object (namespace defaulted) claims what only gitgate or Karmada may
    write: their state, a generated policy's name, their API's CRDs, gitgate's marks."""
    problem = state_problem(obj)
    if problem:
        return problem
    meta = obj.get("metadata") or {}
    group, kind = _group(obj), str(obj.get("kind", ""))
    name = str(meta.get("name", ""))
    if group == "policy.karmada.io" and name.startswith(GENERATED_POLICY_PREFIXES):
        return ("Karmada policy names starting with 'gitgate-' or 'gitgate.' are the ones "
                "gitgate generates; rename the policy")
    if (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        crd_group = str((obj.get("spec") or {}).get("group", ""))
        for reserved in RESERVED_CRD_GROUPS:
            if crd_group == reserved or crd_group.endswith("." + reserved):
                return (f"the API group {crd_group} is {reserved.split('.')[0].capitalize()}'s "
                        "own: a repo cannot define or change its CRDs")
    return _keys_problem(meta)


def _keys_problem(meta: Manifest) -> str | None:
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    for key in sorted(k for k in labels if isinstance(k, str) and k.startswith(GITGATE_KEYS)):
        if key not in REPO_LABELS:
            return (f"the label {key} is gitgate's to write; a repo object may carry only "
                    f"{', '.join(sorted(REPO_LABELS))} of gitgate.io/ labels")
    for key in sorted(k for k in annotations if isinstance(k, str)
                      and k.startswith(GITGATE_KEYS)):
        if key not in REPO_ANNOTATIONS:
            return (f"the annotation {key} is gitgate's to write; a repo object may carry only "
                    f"{', '.join(sorted(REPO_ANNOTATIONS))} of gitgate.io/ annotations")
    return None


def claimed_bundle(obj: Manifest) -> str | None:
    """The bundle an object's `gitgate.io/bundle` label names, if it has one."""
    value = ((obj.get("metadata") or {}).get("labels") or {}).get(BUNDLE_LABEL)
    return bundle_from_label(value) if isinstance(value, str) and value else None


def claim_problem(obj: Manifest, base: str) -> str | None:
    """A `gitgate.io/bundle` label may only move an object within its own source: to the
    source's bundle `base` or one of its apps (`base/<app>`); never into another bundle."""
    claimed = claimed_bundle(obj)
    if claimed is None or claimed == base or (
            claimed.startswith(base + "/") and not segment_problem(claimed[len(base) + 1:])):
        return None
    return (f"it is labelled {BUNDLE_LABEL}: {bundle_label_value(claimed)!r}, but it comes "
            f"from the bundle {base!r}: an object can only be moved within its own source "
            f"({base} or {base}/<app>); remove the label")


def owned_by(live: Manifest, bundle: str) -> bool:
    """The live object carries the mark gitgate writes on every object of `bundle`."""
    labels = (live.get("metadata") or {}).get("labels") or {}
    return labels.get(BUNDLE_LABEL) == bundle_label_value(bundle)


def instance_of(live: Manifest) -> str | None:
    """The gitgate instance whose label a live object carries (None: no instance's; an
    object an earlier release wrote carries none)."""
    value = ((live.get("metadata") or {}).get("labels") or {}).get(INSTANCE_LABEL)
    return value if isinstance(value, str) and value else None


def other_instance(live: Manifest | None, instance: str) -> str | None:
    """The other gitgate instance that owns a live object by its label, else None."""
    owner = instance_of(live) if live is not None else None
    return owner if owner is not None and owner != instance else None


def with_instance(obj: Manifest, instance: str) -> Manifest:
    """The object as gitgate writes it: labelled with the instance that writes it (a new
    object and metadata; the rest is shared with `obj`)."""
    meta = dict(obj.get("metadata") or {})
    labels = meta.get("labels") or {}
    if labels.get(INSTANCE_LABEL) == instance:
        return obj
    meta["labels"] = {**labels, INSTANCE_LABEL: instance}
    return {**obj, "metadata": meta}


def foreign_selector(instance: str) -> str:
    """A label selector for the objects another gitgate instance labelled as its own."""
    return f"{INSTANCE_LABEL},{INSTANCE_LABEL}!={instance}"


@dataclass(frozen=True)
class Origin:
    """Where an instance's bundles come from: the repo (`repo_identity` of its `origin`
    remote, or `file://` and the checkout's folder when it has none) and the gitgate folder
    inside it (`.` for its top). Empty: not known (a record an earlier release wrote)."""

    repo: str = ""
    path: str = ""

    @property
    def known(self) -> bool:
        return bool(self.repo)

    def __str__(self) -> str:
        return self.repo if self.path in ("", ".") else f"{self.repo} (path {self.path})"


_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://([^/?#]*)([^?#]*)")
_SCP = re.compile(r"^(?:[^@/:]+@)?([^/:]+):(?!//)(.*)$")


def repo_identity(url: str) -> str | None:
    """A remote's URL as one identity for every way of writing it: no credentials, scheme
    or user (`https://tok@github.com/org/x.git`, `ssh://git@github.com/org/x` and
    `git@github.com:org/x.git` are all `github.com/org/x`), the host in lower case, no `.git`
    or trailing `/`. None for a local path (`file://` or a plain one): the caller makes it
    absolute."""
    url = url.strip()
    found = _SCHEME.match(url)
    if found is not None:
        scheme, authority, path = found.groups()
        if scheme.lower() == "file":
            return None
        host = authority.rpartition("@")[2].lower()
    else:
        scp = _SCP.match(url)
        if scp is None or "/" in scp.group(1) or len(scp.group(1)) == 1:
            return None  # a plain path (a drive letter is not a host)
        host, path = scp.group(1).lower(), scp.group(2)
    path = path.strip("/").removeprefix("~/").removesuffix(".git").rstrip("/")
    return f"{host}/{path}" if path else host


def local_identity(folder: str) -> str:
    """A local repo (a checkout without a remote, or a path a remote names) by its absolute
    folder, `.git` dropped as for a URL: a clone's `origin` then names the repo it came from
    the way that repo names itself."""
    folder = folder.rstrip("/") or "/"
    if folder.endswith("/.git"):
        folder = folder[:-len("/.git")] or "/"
    elif folder.endswith(".git"):
        folder = folder[:-len(".git")]
    return f"file://{folder}"
