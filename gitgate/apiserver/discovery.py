"""Discovery: which resource serves a kind and whether it is namespaced, read from the API
server once per group version and cached; a kind someone added since (a new CRD) is looked
up again at most once per DISCOVERY_REFRESH seconds. Object paths are built here, only from
segments that stay segments."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gitgate.errors import GitgateError, KubeError
from gitgate.model.ownership import api_version_problem, segment_problem

DISCOVERY_REFRESH = 10.0  # seconds between re-reads of one group's discovery on a miss

Request = Callable[[str, str], tuple[int, Any]]  # (method, path) -> (status, body)


@dataclass(frozen=True)
class ApiResource:
    group_version: str
    plural: str
    namespaced: bool


class Discovery:
    def __init__(self, request: Request, clock: Callable[[], float] = time.monotonic):
        self._request = request
        self._clock = clock
        self._discovery: dict[str, dict[str, ApiResource]] = {}
        self._refreshed: dict[str, float] = {}
        self._lock = threading.Lock()

    def _resources(self, group_version: str) -> dict[str, ApiResource]:
        with self._lock:
            cached = self._discovery.get(group_version)
        if cached is not None:
            return cached
        path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        status, body = self._request("GET", path)
        found: dict[str, ApiResource] = {}
        if status == 200 and isinstance(body, dict):
            for resource in body.get("resources", []):
                if "/" not in resource["name"]:
                    found[resource["kind"]] = ApiResource(group_version, resource["name"],
                                                          bool(resource["namespaced"]))
        with self._lock:
            if found:
                self._discovery[group_version] = found
        return found

    def _may_refresh(self, group_version: str) -> bool:
        """At most one re-read of a group's discovery per DISCOVERY_REFRESH seconds."""
        now = self._clock()
        with self._lock:
            last = self._refreshed.get(group_version)
            if last is not None and now - last < DISCOVERY_REFRESH:
                return False
            self._refreshed[group_version] = now
            return True

    def refresh(self) -> None:
        with self._lock:
            self._discovery.clear()

    def resource_for(self, api_version: str, kind: str) -> ApiResource:
        resource = self._resources(api_version).get(kind)
        if resource is None and self._may_refresh(api_version):
            # a kind someone else added since the group was read (a new CRD): read it again
            with self._lock:
                self._discovery.pop(api_version, None)
            resource = self._resources(api_version).get(kind)
        if resource is None:
            raise KubeError(f"the API server does not serve {kind} in {api_version} (is its "
                            "CRD installed and established?)", status=404, api_reason="NotFound")
        return resource

    def scope_of(self, api_version: str, kind: str) -> bool | None:
        """Whether the API server serves `kind` as namespaced; None when it does not serve it
        (or cannot be asked now: then the repo's own knowledge decides)."""
        if api_version_problem(api_version):
            return None
        try:
            return self.resource_for(api_version, kind).namespaced
        except GitgateError:
            return None

    def path_for(self, api_version: str, kind: str, namespace: str, name: str = "") -> str:
        """The object's URL path, built only from segments that stay segments (a name with
        '/' or '..' never walks to another object's path, whatever let it through)."""
        for value in (namespace, name):
            if value and segment_problem(value):
                raise KubeError(f"{kind} {namespace + '/' if namespace else ''}{name!r}: "
                                f"{segment_problem(value)}; refusing to build a request for it")
        if api_version_problem(api_version):
            raise KubeError(f"apiVersion {api_version!r}: {api_version_problem(api_version)}")
        resource = self.resource_for(api_version, kind)
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        if resource.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        elif resource.namespaced and name:
            raise KubeError(f"{kind} {name} needs a namespace")
        base += f"/{resource.plural}"
        return base + (f"/{quote(name, safe='')}" if name else "")
