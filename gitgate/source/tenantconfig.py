"""The `tenants` and `untenanted` of gitgate.yaml, parsed and checked."""

from __future__ import annotations

import re
from typing import Any

from gitgate.errors import ConfigError
from gitgate.model.tenantspec import PLATFORM, REFUSE, Tenancy, Tenant
from gitgate.source.configfields import (
    entries,
    optional_mapping,
    reject_unknown,
    str_list,
)
from gitgate.source.rolloutconfig import cluster_selector

_TENANT_KEYS = {"name", "paths", "namespaces", "clusters", "kinds", "clusterScoped",
                "serviceAccount"}



_TENANT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")



def parse_tenancy(data: dict[str, Any], file: str) -> Tenancy:
    """`tenants:` (who owns which folders, and where their bundles may write) and
    `untenanted: platform | refuse` (what a source outside every tenant is)."""
    outside = data.get("untenanted", PLATFORM)
    if outside not in (PLATFORM, REFUSE):
        raise ConfigError(f"untenanted must be {PLATFORM} or {REFUSE}, not {outside!r}",
                          file=file)
    value = data.get("tenants")
    if value is None:
        return Tenancy((), outside)
    if not isinstance(value, list):
        raise ConfigError("tenants must be a list of {name, paths, namespaces, ...}", file=file)
    tenants: list[Tenant] = []
    for where, item in entries(value, file, "tenants", _TENANT_KEYS):
        name = item.get("name")
        if not isinstance(name, str) or not _TENANT_NAME.match(name) or name == PLATFORM:
            raise ConfigError(f"{where}.name must be a lowercase DNS label other than "
                              f"{PLATFORM!r}", file=file)
        if any(t.name == name for t in tenants):
            raise ConfigError(f"{where}.name {name!r} is used twice", file=file)
        paths = str_list(item.get("paths"), file, f"{where}.paths")
        if not paths:
            raise ConfigError(f"{where}.paths names no folder: a tenant owns the folders "
                              "it lists", file=file)
        for path in paths:
            if path.startswith("/") or ".." in path.split("/"):
                raise ConfigError(f"{where}.paths entry {path!r} must stay inside the repo",
                                  file=file)
        clusters = item.get("clusters")
        chosen = None
        if isinstance(clusters, dict) and set(clusters) == {"labelSelector"}:
            chosen = cluster_selector(clusters["labelSelector"], file,
                                      f"{where}.clusters.labelSelector")
            clusters = None
        elif clusters is not None and not isinstance(clusters, list):
            raise ConfigError(f"{where}.clusters must be a list of member cluster names or "
                              "{labelSelector: {matchLabels: {...}}} over Karmada's Clusters "
                              "(omit it for any cluster)", file=file)
        kinds = optional_mapping(item.get("kinds"), file, f"{where}.kinds") or {}
        reject_unknown(kinds, {"allow", "deny"}, file, f"{where}.kinds.")
        scoped = item.get("clusterScoped", False)
        if not isinstance(scoped, bool):
            raise ConfigError(f"{where}.clusterScoped must be true or false", file=file)
        account = optional_mapping(item.get("serviceAccount"), file, f"{where}.serviceAccount")
        if account is not None:
            reject_unknown(account, {"namespace", "name"}, file, f"{where}.serviceAccount.")
            if not all(isinstance(account.get(k), str) and _TENANT_NAME.match(account[k])
                       for k in ("namespace", "name")):
                raise ConfigError(f"{where}.serviceAccount needs a namespace and a name (DNS "
                                  "labels)", file=file)
        tenants.append(Tenant(
            name, paths, str_list(item.get("namespaces"), file, f"{where}.namespaces"),
            None if clusters is None else str_list(clusters, file, f"{where}.clusters"),
            str_list(kinds.get("allow"), file, f"{where}.kinds.allow") or ("*",),
            str_list(kinds.get("deny"), file, f"{where}.kinds.deny"), scoped,
            (account["namespace"], account["name"]) if account else None, chosen))
    return Tenancy(tuple(tenants), outside)
