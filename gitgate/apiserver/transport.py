"""The transport to the API server: the official client's ApiClient loads the kubeconfig
(auth, TLS, proxies) and supplies the headers; every request goes through its pool manager,
bounded (`exchange`: a deadline, a cap on the answer, no redirect, no encoding); with the
adapter's one retry policy; answers come back as (status, parsed body), credential refusals
as KubeError."""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import orjson
import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from gitgate.apiserver.apierrors import (
    RetryPolicy,
    Timeouts,
    credential_error,
    display_url,
    transport_error,
)
from gitgate.apiserver.exchange import BoundedPool, bounded_pool
from gitgate.apiserver.fanout import MAX_CONCURRENCY
from gitgate.errors import GitgateError, KubeError


def load_client(kubeconfig: str | None = None, context: str | None = None, *,
                timeouts: Timeouts | None = None) -> k8s.ApiClient:
    """A client from --kubeconfig/--context, $KUBECONFIG, ~/.kube/config, or in-cluster.

    urllib3 never retries on its own (the adapter's RetryPolicy is the only one) and never
    warns per request; every request, the Lease's too, is bounded by `timeouts` (its pool
    manager is a `BoundedPool`)."""
    configuration = k8s.Configuration()
    try:
        if kubeconfig or context:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context,
                                        client_configuration=configuration)
        else:
            try:
                k8s_config.load_kube_config(client_configuration=configuration)
            except (ConfigException, FileNotFoundError) as exc:
                if not os.environ.get("KUBERNETES_SERVICE_HOST"):  # not in a pod either
                    raise GitgateError(
                        f"no kubeconfig ({exc}) and not running in a pod: pass --kubeconfig, "
                        "set KUBECONFIG, or create ~/.kube/config") from None
                k8s_config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, FileNotFoundError) as exc:
        raise GitgateError(f"cannot load a kubeconfig ({exc}); pass --kubeconfig or set "
                           "KUBECONFIG") from None
    configuration.retries = False
    if configuration.refresh_api_key_hook is not None:
        configuration.refresh_api_key_hook = throttled_refresh(
            configuration.refresh_api_key_hook)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize,
                                                   MAX_CONCURRENCY)
    api = k8s.ApiClient(configuration)
    bounds = timeouts or Timeouts()
    api.rest_client.pool_manager.connection_pool_kw["timeout"] = urllib3.Timeout(
        connect=bounds.connect, read=bounds.read)
    bounded_pool(api, bounds)
    if not configuration.verify_ssl:
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    return api


TOKEN_CHECK_SECONDS = 10.0


def throttled_refresh(hook: Callable[[Any], None], seconds: float = TOKEN_CHECK_SECONDS,
                      clock: Callable[[], float] = time.monotonic) -> Callable[[Any], None]:
    """The client's token hook, run at most once every `seconds`.

    With a token in the kubeconfig, the client re-applies the whole kubeconfig before every
    request (its host setter reads the proxy variables of the environment each time): about
    a third of the client's CPU per request. It renews a token 5 minutes before it expires
    (EXPIRY_SKEW_PREVENTION_DELAY), so checking every few seconds renews it just as surely."""
    lock = threading.Lock()
    last: list[float] = []
    inner = [hook]

    def refresh(configuration: Any) -> None:
        with lock:
            now = clock()
            if last and now - last[0] < seconds:
                return
            inner[0](configuration)
            last[:] = [now]
            if configuration.refresh_api_key_hook is not refresh:  # the hook sets itself anew
                inner[0] = configuration.refresh_api_key_hook
                configuration.refresh_api_key_hook = refresh
    return refresh


def impersonating(api: k8s.ApiClient, user: str) -> k8s.ApiClient:
    """A client that sends every request as `user` (`Impersonate-User`): the API server's
    RBAC then decides as for that user. It shares the connection settings and pool."""
    client = k8s.ApiClient(api.configuration)
    client.rest_client = api.rest_client
    client.set_default_header("Impersonate-User", user)
    return client


def tls_verification_off(api: k8s.ApiClient) -> bool:
    return not api.configuration.verify_ssl


APPLY_PATCH = "application/apply-patch+yaml"
JSON = "application/json"


def _json(api: k8s.ApiClient, body: Any) -> bytes:
    """A request body as JSON: orjson, or the official client's own encoding for what orjson
    cannot encode as json would (see `_encoded`)."""
    try:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(api.sanitize_for_serialization(body)).encode()


def _encoded(body: dict[str, Any]) -> bytes | dict[str, Any]:
    """A JSON body (a create, a delete's options) or a server-side apply body (JSON is YAML)
    as JSON bytes, encoded by orjson: the client would walk the whole object to sanitize it,
    then encode it with json, for every write. What orjson cannot encode as json would (a
    float subclass from YAML, an integer beyond 64 bits) is left to the client's own path."""
    try:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return body


# told of every request once it is answered (or given up): its verb, the resource it names
# (`resource_of`), the status code (0: no answer) and the seconds it took, retries included
RequestObserver = Callable[[str, str, int, float], None]


def resource_of(path: str) -> str:
    """The resource a request's path names, for a metric's label: `configmaps`,
    `bundles/status`, `namespaces`; `discovery` for the API's own listings."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:2] == ["api", "v1"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 3:
        rest = parts[3:]
    else:
        return "discovery"
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return "discovery"
    return f"{rest[0]}/{rest[2]}" if len(rest) > 2 else rest[0]


class Transport:
    """Sends one request and reads its answer."""

    def __init__(self, api: k8s.ApiClient, *, timeouts: Timeouts | None = None,
                 retry: RetryPolicy | None = None, observer: RequestObserver | None = None):
        self.api = api
        self.timeouts = timeouts or Timeouts()
        self.retry = retry or RetryPolicy()
        self.server = display_url(api.configuration.host)  # never its user:password
        self.observer = observer
        self.pool: BoundedPool = bounded_pool(api, self.timeouts)
        self.base = str(api.configuration.host).rstrip("/")  # a server behind a path too

    def stream_lines(self, path: str, query: dict[str, str], seconds: float) -> Iterator[bytes]:
        """The lines of a streamed GET (a watch), as they come, for at most `seconds` (plus
        the request timeout), none longer than the answer cap. Raises KubeError when it
        cannot be opened, is refused, or breaks (the caller watches again)."""
        headers = self._headers({"Accept": "application/json"})
        lines = self.pool.stream_lines(f"{self.base}{path}?{urlencode(list(query.items()))}",
                                       headers, seconds, self.timeouts)
        try:
            yield from lines
        except KubeError:
            raise
        except Exception as exc:  # no answer, or the stream broke
            raise transport_error(exc, self.server, self.timeouts)[0] from None
        finally:
            lines.close()

    def request(self, method: str, path: str, *, query: dict[str, str] | None = None,
                body: Any = None, content_type: str | None = None,
                accept: str = "application/json") -> tuple[int, Any]:
        if self.observer is None:
            return self._request(method, path, query, body, content_type, accept)
        started, status = time.monotonic(), 0
        try:
            status, answer = self._request(method, path, query, body, content_type, accept)
            return status, answer
        except KubeError as exc:
            status = exc.status or 0
            raise
        finally:
            self.observer(method, resource_of(path), status, time.monotonic() - started)

    def _request(self, method: str, path: str, query: dict[str, str] | None, body: Any,
                 content_type: str | None, accept: str) -> tuple[int, Any]:
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        if content_type in (APPLY_PATCH, JSON) and isinstance(body, dict):
            body = _encoded(body)
        status = 0
        raw: bytes = b""
        for attempt in range(self.retry.attempts):
            last = attempt + 1 == self.retry.attempts
            try:
                status, raw = self._send(method, path, query, body, headers)
            except KubeError:
                raise
            except Exception as exc:  # urllib3's or the socket's: the server and the cause
                error, retryable = transport_error(exc, self.server, self.timeouts)
                if retryable and not last:
                    time.sleep(self.retry.delay(attempt))
                    continue
                raise error from None
            if status == 429 and not last:
                time.sleep(self.retry.delay(attempt))
                continue
            break
        try:  # orjson: a list of 5,000 Bundles decodes in a third of json's time
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        refused = credential_error(status, body, method, path)
        if refused is not None:
            raise refused
        return status, body

    def _headers(self, headers: dict[str, str]) -> dict[str, str]:
        """`headers` and the official client's: its defaults (an impersonated user's among
        them), its cookie, and its token, refreshed by its hook as on its own path."""
        sent = dict(headers)
        sent.update(self.api.default_headers)
        if self.api.cookie:
            sent["Cookie"] = self.api.cookie
        for setting in self.api.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                sent[setting["key"]] = setting["value"]
        return sent

    def _send(self, method: str, path: str, query: dict[str, str] | None, body: Any,
              headers: dict[str, str]) -> tuple[int, bytes]:
        sent = self._headers(headers)
        payload: bytes | None = None
        if body is not None:
            sent.setdefault("Content-Type", "application/json")
            payload = body if isinstance(body, bytes) else _json(self.api, body)
        url = self.base + path + (f"?{urlencode(list(query.items()))}" if query else "")
        answer = self.pool.exchange(method, url, payload, sent, self.timeouts)
        return answer.status, answer.data
