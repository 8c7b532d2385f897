"""Parse and validate a rollout's analysis: the providers `gitgate.yaml` lists
(`analysis: {providers: [...]}`) and a bundle's `rollout.analysis` checks, each resolved to
a provider the bundle's tenant may use. Complaints begin with the key path, which
`source.config` turns into a line."""

from __future__ import annotations

import re
from typing import Any

from gitgate.errors import ConfigError
from gitgate.model.analysisspec import COMPARISONS, Check, FailIf, Provider
from gitgate.model.promql import template_problem
from gitgate.source.configfields import entries, reject_unknown
from gitgate.timespec import parse_duration

_ANALYSIS_KEYS = {"providers"}
_PROVIDER_KEYS = {"name", "url", "credentials", "caFile", "tenants"}
_CHECK_KEYS = {"name", "prometheus", "query", "failIf", "interval", "failureLimit"}
_CHECK_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_FAIL_IF = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?$")
MIN_INTERVAL_S = 1


def _url_ok(url: str) -> bool:
    """http(s), a host name or IPv4 address, a port, a plain path: no user, query or
    fragment."""
    return _URL.match(url) is not None


def _text(value: Any, file: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key} must be a non-empty string", file=file)
    return value.strip()


def _host_file(value: Any, file: str, key: str) -> str:
    path = _text(value, file, key)
    if not path.startswith("/") or ".." in path.split("/"):
        raise ConfigError(f"{key} {path!r} must be an absolute path on gitgate's host (a "
                          "mounted Secret, say)", file=file)
    return path


def parse_providers(value: Any, file: str) -> tuple[Provider, ...]:
    """`analysis: {providers: [{name, url, credentials: {tokenFile: PATH}, caFile: PATH,
    tenants: [names]}]}`. Nothing listed: no analysis can run."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ConfigError("analysis must be a mapping: {providers: [...]}", file=file)
    reject_unknown(value, _ANALYSIS_KEYS, file, "analysis.")
    items = value.get("providers") or []
    if not isinstance(items, list):
        raise ConfigError("analysis.providers must be a list of {name, url, ...}", file=file)
    out: list[Provider] = []
    for where, item in entries(items, file, "analysis.providers", _PROVIDER_KEYS):
        name = _text(item.get("name"), file, f"{where}.name")
        url = _text(item.get("url"), file, f"{where}.url").rstrip("/")
        if not _url_ok(url):
            raise ConfigError(f"{where}.url must be an http:// or https:// URL of a Prometheus, "
                              "without user, query or fragment", file=file)
        if any(p.name == name for p in out):
            raise ConfigError(f"{where}.name {name!r} is already an earlier provider's",
                              file=file)
        credentials = item.get("credentials")
        token_file = None
        if credentials is not None:
            if not isinstance(credentials, dict) or set(credentials) != {"tokenFile"}:
                raise ConfigError(f"{where}.credentials must name them, never hold them: "
                                  "{tokenFile: /path/on/gitgate's/host} (a bearer token)",
                                  file=file)
            token_file = _host_file(credentials["tokenFile"], file,
                                    f"{where}.credentials.tokenFile")
        ca_file = (_host_file(item["caFile"], file, f"{where}.caFile")
                   if item.get("caFile") is not None else None)
        tenants = item.get("tenants")
        if tenants is not None and (not isinstance(tenants, list) or not all(
                isinstance(t, str) for t in tenants)):
            raise ConfigError(f"{where}.tenants must be a list of tenant names", file=file)
        out.append(Provider(url, name, token_file, ca_file,
                            None if tenants is None else tuple(tenants)))
    return tuple(out)


def parse_fail_if(value: Any, file: str, key: str) -> FailIf:
    found = _FAIL_IF.match(value) if isinstance(value, str) else None
    if found is None:
        raise ConfigError(f"{key} must be a comparison and a number, quoted: \"> 0.05\" "
                          f"(one of {', '.join(COMPARISONS)})", file=file)
    return FailIf(found.group(1), float(found.group(2)))


def parse_analysis(value: Any, file: str, key: str, providers: tuple[Provider, ...]
                   ) -> tuple[Check, ...]:
    """`analysis: [{name, prometheus: {provider: NAME} | {url: URL}, query, failIf,
    interval: 30s, failureLimit: 0}]` under a `rollout:`."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key} must be a non-empty list of {{name, prometheus, query, "
                          "failIf}}", file=file)
    checks: list[Check] = []
    for where, item in entries(value, file, key, _CHECK_KEYS):
        name = _text(item.get("name"), file, f"{where}.name")
        if not _CHECK_NAME.match(name) or any(c.name == name for c in checks):
            raise ConfigError(f"{where}.name {name!r} must be lowercase letters, digits and "
                              "'-', and differ from the other checks' names", file=file)
        query = _text(item.get("query"), file, f"{where}.query")
        problem = template_problem(query)
        if problem:
            raise ConfigError(f"{where}.query: {problem}", file=file)
        try:
            interval = parse_duration(str(item.get("interval", "30s")))
        except ConfigError as exc:
            raise ConfigError(f"{where}.interval: {exc.message}", file=file) from None
        if interval.total_seconds() < MIN_INTERVAL_S:
            raise ConfigError(f"{where}.interval must be at least {MIN_INTERVAL_S}s", file=file)
        limit = item.get("failureLimit", 0)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise ConfigError(f"{where}.failureLimit must be a whole number, 0 or more",
                              file=file)
        checks.append(Check(name, _provider(item.get("prometheus"), file,
                                            f"{where}.prometheus", providers),
                            query, parse_fail_if(item.get("failIf"), file, f"{where}.failIf"),
                            interval, limit))
    return tuple(checks)


def _provider(value: Any, file: str, key: str, providers: tuple[Provider, ...]) -> Provider:
    """`{provider: NAME}` or `{url: URL}`: either way one that `gitgate.yaml` lists."""
    if not isinstance(value, dict) or len(value) != 1 or not set(value) <= {"provider", "url"}:
        raise ConfigError(f"{key} must be {{provider: NAME}} or {{url: URL}}, naming one of "
                          "gitgate.yaml's analysis.providers", file=file)
    if "provider" in value:
        name = _text(value["provider"], file, f"{key}.provider")
        found = next((p for p in providers if p.name == name), None)
    else:
        name = _text(value["url"], file, f"{key}.url").rstrip("/")
        found = next((p for p in providers if p.url == name), None)
    if found is None:
        listed = ", ".join(p.label for p in providers) or "none"
        raise ConfigError(f"{key}: {name} is not in gitgate.yaml's analysis.providers "
                          f"(listed: {listed}); nothing is queried there", file=file)
    return found


def refused_provider(checks: tuple[Check, ...], tenant: str) -> str:
    """Why `tenant` may not use one of the checks' providers ("" when it may use them all)."""
    for index, check in enumerate(checks):
        if not check.provider.allows(tenant):
            return (f"rollout.analysis[{index}].prometheus: provider {check.provider.label} "
                    f"is not allowed for tenant {tenant} (gitgate.yaml analysis.providers "
                    "tenants)")
    return ""
