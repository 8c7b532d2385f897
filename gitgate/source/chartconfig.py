"""Charts in gitgate.yaml and bundle.yaml: `charts` (the repositories charts may come from, per
tenant, whether their provenance is verified and with which keyring, and their size cap) and
a source's `helm: {repo, chart, version}`."""

from __future__ import annotations

import re
from typing import Any

from gitgate.errors import ConfigError
from gitgate.model.chartspec import (
    DEFAULT_MAX_CHART_BYTES,
    OCI,
    ChartPolicy,
    ChartRef,
    ChartRepository,
    is_chart_repository,
    url_parts,
)
from gitgate.source.configfields import (
    entries,
    optional_mapping,
    optional_str,
    reject_unknown,
    str_list,
)

_HELM_KEYS = {"repo", "chart", "version"}



_CHARTS_KEYS = {"repositories", "maxSize"}



_CHART_REPO_KEYS = {"url", "name", "credentials", "caFile", "tenants", "verify", "keyring"}



_CHART_NAME = re.compile(r"^[a-z0-9]([-a-z0-9._]{0,99})$")



def _host_path(value: str, file: str, key: str) -> str:
    """A file on gitgate's host (a mounted Secret, a CA bundle): an absolute path."""
    if not value.startswith("/") or ".." in value.split("/"):
        raise ConfigError(f"{key} {value!r} must be an absolute path on gitgate's host (a "
                          "mounted Secret, say)", file=file)
    return value



def parse_chart_policy(value: Any, file: str) -> ChartPolicy:
    """`charts: {repositories: [{url, name, credentials: {file: PATH} | {secret: NAME},
    caFile: PATH, tenants: [names]}], maxSize: BYTES}`: where charts may come from. Nothing
    listed: no chart is fetched from anywhere."""
    if value is None:
        return ChartPolicy()
    if not isinstance(value, dict):
        raise ConfigError("charts must be a mapping: {repositories: [...], maxSize: BYTES}",
                          file=file)
    reject_unknown(value, _CHARTS_KEYS, file, "charts.")
    size = value.get("maxSize", DEFAULT_MAX_CHART_BYTES)
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ConfigError("charts.maxSize must be a positive number of bytes", file=file)
    items = value.get("repositories") or []
    if not isinstance(items, list):
        raise ConfigError("charts.repositories must be a list of {url, ...}", file=file)
    repositories: list[ChartRepository] = []
    for where, item in entries(items, file, "charts.repositories", _CHART_REPO_KEYS):
        url = optional_str(item.get("url"), file, f"{where}.url")
        if url is None or url_parts(url) is None:
            raise ConfigError(f"{where}.url must be an https:// chart repository (http:// "
                              "only on 127.0.0.1 or [::1]) or an oci:// registry path, "
                              "without user, query or fragment", file=file)
        credentials = optional_mapping(item.get("credentials"), file, f"{where}.credentials")
        cred_file = cred_secret = None
        if credentials is not None:
            if url.startswith("http://"):
                raise ConfigError(f"{where}.credentials: a repository on plain http:// is "
                                  "sent none; serve it over https:// to use credentials",
                                  file=file)
            if len(credentials) != 1 or not set(credentials) <= {"file", "secret"}:
                raise ConfigError(f"{where}.credentials must name them, never hold them: "
                                  "{file: /path/on/gitgate's/host} or {secret: NAME} (a "
                                  "Secret in gitgate's namespace)", file=file)
            if "file" in credentials:
                cred_file = _host_path(str(credentials["file"]), file,
                                       f"{where}.credentials.file")
            else:
                cred_secret = optional_str(credentials.get("secret"), file,
                                            f"{where}.credentials.secret")
        ca_file = optional_str(item.get("caFile"), file, f"{where}.caFile")
        tenants = item.get("tenants")
        verify, key_file, key_secret = _chart_keyring(item, url, file, where)
        repositories.append(ChartRepository(
            url.rstrip("/"), optional_str(item.get("name"), file, f"{where}.name") or "",
            cred_file, cred_secret,
            _host_path(ca_file, file, f"{where}.caFile") if ca_file else None,
            None if tenants is None else str_list(tenants, file, f"{where}.tenants"),
            verify, key_file, key_secret))
    return ChartPolicy(tuple(repositories), size)



def _chart_keyring(item: dict[str, Any], url: str, file: str,
                   where: str) -> tuple[bool, str | None, str | None]:
    """`verify: true` with `keyring: {file: PATH} | {secret: NAME}`: (verify, file, secret)."""
    verify = item.get("verify", False)
    if not isinstance(verify, bool):
        raise ConfigError(f"{where}.verify must be true or false", file=file)
    keyring = optional_mapping(item.get("keyring"), file, f"{where}.keyring")
    if not verify:
        if keyring is not None:
            raise ConfigError(f"{where}.keyring is only used with verify: true", file=file)
        return False, None, None
    if keyring is None or len(keyring) != 1 or not set(keyring) <= {"file", "secret"}:
        raise ConfigError(f"{where}.verify: true needs keyring: {{file: /path/on/gitgate's/"
                          "host}} or {secret: NAME} (its `keyring` key): the OpenPGP public "
                          "keys the charts' provenance files are checked with", file=file)
    if "file" in keyring:
        return True, _host_path(str(keyring["file"]), file, f"{where}.keyring.file"), None
    return True, None, optional_str(keyring.get("secret"), file, f"{where}.keyring.secret")



def parse_chart_ref(value: Any, file: str) -> ChartRef | None:
    """`helm: {repo: https://..., chart: NAME, version: X}` or
    `helm: {chart: oci://registry/path/NAME, version: X}`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError("helm must be {repo: https://..., chart: NAME, version: X} or "
                          "{chart: oci://registry/path/NAME, version: X}", file=file)
    reject_unknown(value, _HELM_KEYS, file, "helm.")
    chart = optional_str(value.get("chart"), file, "helm.chart")
    version = value.get("version")
    if not isinstance(version, str) or not version.strip():
        raise ConfigError("helm.version must be a version or a range, as a string (quote "
                          "it: version: \"6.5.0\")", file=file)
    if chart is None:
        raise ConfigError("helm.chart must name the chart", file=file)
    repo = optional_str(value.get("repo"), file, "helm.repo")
    if chart.startswith(OCI):
        if repo is not None:
            raise ConfigError("helm.repo goes with a chart repository's chart name; an oci:// "
                              "chart names its registry itself", file=file)
        repo, _, chart = chart.rpartition("/")
        if url_parts(repo) is None or repo == OCI.rstrip("/"):
            raise ConfigError("helm.chart must be oci://registry/path/NAME", file=file)
    elif repo is None or not is_chart_repository(repo):
        raise ConfigError("helm.repo must be the https:// URL of a chart repository (http:// "
                          "only on 127.0.0.1 or [::1]), or name an oci:// chart in "
                          "helm.chart", file=file)
    if not _CHART_NAME.match(chart):
        raise ConfigError(f"helm.chart {chart!r} is not a chart name (lowercase letters, "
                          "digits, '-', '_' and '.')", file=file)
    return ChartRef(repo.rstrip("/"), chart, version.strip())
