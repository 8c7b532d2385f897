"""Parse and validate `gitgate.yaml` (repo settings) and `bundle.yaml` (per-source options)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from gitgate.errors import ConfigError
from gitgate.model import BundleOptions, Manifest, RolloutSpec
from gitgate.model.chartspec import (
    DEFAULT_MAX_CHART_BYTES,
    OCI,
    ChartPolicy,
    ChartRef,
    ChartRepository,
    url_parts,
)
from gitgate.model.clusterspec import Customization
from gitgate.model.rolloutspec import (
    ON_FAILURE,
    OPERATORS,
    ClusterSelector,
    Requirement,
    Wave,
)
from gitgate.model.tenantspec import PLATFORM, REFUSE, Tenancy, Tenant
from gitgate.timespec import parse_duration
from gitgate.yamlio import YamlSyntaxError, key_line, load_one

REPO_CONFIG = "gitgate.yaml"
BUNDLE_CONFIG = "bundle.yaml"

_DEFAULT_KEYS = {"namespace", "placement", "labels", "rollout"}
_ROLLOUT_KEYS = {"waves", "bake", "progressDeadline", "onFailure"}
_REPO_KEYS = {"apiVersion", "kind", "paths", "gatesPath", "defaults", "tenants", "untenanted",
              "verify", "gates", "charts"}
_VERIFY_KEYS = {"commits", "allowedSigners", "allowedGpgKeys"}
_BUNDLE_KEYS = {"name", "namespace", "releaseName", "valuesFiles", "values", "dir",
                "placement", "labels", "dependsOn", "split", "rollout", "clusters", "helm"}
_HELM_KEYS = {"repo", "chart", "version"}
_CHARTS_KEYS = {"repositories", "maxSize"}
_CHART_REPO_KEYS = {"url", "name", "credentials", "caFile", "tenants", "verify", "keyring"}
_CHART_NAME = re.compile(r"^[a-z0-9]([-a-z0-9._]{0,99})$")
_CUSTOMIZATION_KEYS = {"clusters", "labelSelector", "values", "patches"}
_PATCH_KEYS = {"patch", "target"}
_TARGET_KEYS = {"group", "version", "kind", "name", "namespace", "labelSelector",
                "annotationSelector"}
SPLIT_MODES = {"app"}
_BUNDLE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,50}[a-z0-9])?$")


@dataclass(frozen=True)
class RepoConfig:
    paths: tuple[str, ...] = (".",)
    gates_path: str = "gates"
    gates_path_configured: bool = False  # gitgate.yaml names it (then it must exist)
    default_namespace: str = "default"
    default_placement: Manifest | None = None
    default_labels: dict[str, str] = field(default_factory=dict)
    default_rollout: RolloutSpec | None = None
    default_rollout_at: tuple[str, int] = ("", 0)  # gitgate.yaml's `defaults.rollout` line
    tenancy: Tenancy = field(default_factory=Tenancy)
    provenance: Provenance | None = None  # `verify:` and `gates.signers`
    charts: ChartPolicy = field(default_factory=ChartPolicy)  # where charts may come from


@dataclass(frozen=True)
class Provenance:
    """Who may sign what, as gitgate.yaml declares it. The loop reads it from the last
    revision it verified (never from the head it is about to judge), so only a signed commit
    changes it; the key files are read from that revision too."""

    allowed_signers: str | None = None  # SSH keys (git's allowed-signers format), repo path
    allowed_gpg_keys: str | None = None  # armored OpenPGP public keys, repo path
    commits: bool = False  # only a head an allowed key signed is applied
    gate_signers: tuple[str, ...] = ()  # principals, emails or key ids of the allowed signers


def _mapping(text: str, file: str) -> dict[str, Any]:
    try:
        data = load_one(text)
    except YamlSyntaxError as exc:
        raise ConfigError(str(exc), file=file, line=exc.line or 1) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level", file=file, line=1)
    return data


def _reject_unknown(data: dict[str, Any], allowed: set[str], file: str, where: str = "") -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(
            f"unknown field(s) {', '.join(where + k for k in unknown)}; "
            f"allowed: {', '.join(sorted(allowed))}", file=file)


def _str_list(value: Any, file: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{key} must be a list of non-empty strings", file=file)
    return tuple(value)


def _labels(value: Any, file: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{key} must map label names to strings", file=file)
    return {str(k): v for k, v in value.items()}


def _optional_str(value: Any, file: str, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key} must be a non-empty string", file=file)
    return value


NO_PLACEMENT = "none"  # `placement: none`: the bundle stays on the control plane on purpose


def _optional_mapping(value: Any, file: str, key: str) -> Manifest | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a mapping", file=file)
    return value


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
    for index, item in enumerate(value):
        where = f"tenants[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be a mapping", file=file)
        _reject_unknown(item, _TENANT_KEYS, file, f"{where}.")
        name = item.get("name")
        if not isinstance(name, str) or not _TENANT_NAME.match(name) or name == PLATFORM:
            raise ConfigError(f"{where}.name must be a lowercase DNS label other than "
                              f"{PLATFORM!r}", file=file)
        if any(t.name == name for t in tenants):
            raise ConfigError(f"{where}.name {name!r} is used twice", file=file)
        paths = _str_list(item.get("paths"), file, f"{where}.paths")
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
            chosen = _selector(clusters["labelSelector"], file, f"{where}.clusters.labelSelector")
            clusters = None
        elif clusters is not None and not isinstance(clusters, list):
            raise ConfigError(f"{where}.clusters must be a list of member cluster names or "
                              "{labelSelector: {matchLabels: {...}}} over Karmada's Clusters "
                              "(omit it for any cluster)", file=file)
        kinds = _optional_mapping(item.get("kinds"), file, f"{where}.kinds") or {}
        _reject_unknown(kinds, {"allow", "deny"}, file, f"{where}.kinds.")
        scoped = item.get("clusterScoped", False)
        if not isinstance(scoped, bool):
            raise ConfigError(f"{where}.clusterScoped must be true or false", file=file)
        account = _optional_mapping(item.get("serviceAccount"), file, f"{where}.serviceAccount")
        if account is not None:
            _reject_unknown(account, {"namespace", "name"}, file, f"{where}.serviceAccount.")
            if not all(isinstance(account.get(k), str) and _TENANT_NAME.match(account[k])
                       for k in ("namespace", "name")):
                raise ConfigError(f"{where}.serviceAccount needs a namespace and a name (DNS "
                                  "labels)", file=file)
        tenants.append(Tenant(
            name, paths, _str_list(item.get("namespaces"), file, f"{where}.namespaces"),
            None if clusters is None else _str_list(clusters, file, f"{where}.clusters"),
            _str_list(kinds.get("allow"), file, f"{where}.kinds.allow") or ("*",),
            _str_list(kinds.get("deny"), file, f"{where}.kinds.deny"), scoped,
            (account["namespace"], account["name"]) if account else None, chosen))
    return Tenancy(tuple(tenants), outside)


def _located(exc: ConfigError, text: str | None) -> ConfigError:
    """Give a complaint the line of the key it names: messages begin with the key path
    (`rollout.waves[1]...`, `unknown field(s) defaults.x`), looked up in the parsed text."""
    if exc.line or not text:
        return exc
    unknown = re.match(r"unknown field\(s\) ([^,;]+)", exc.message)
    named = unknown or re.match(r"([A-Za-z][A-Za-z0-9]*(?:(?:\.[A-Za-z][A-Za-z0-9]*)|"
                                r"(?:\[\d+\]))*)(?![A-Za-z0-9])", exc.message)
    if named is None:
        return exc
    parts = [p for p in re.split(r"[.\[\]]+", named.group(1)) if p]
    # messages count list items from 0, as Kubernetes paths do (`waves[0]` is the first wave)
    exc.line = key_line(text, tuple(parts))
    return exc


def parse_repo_config(text: str | None, file: str = REPO_CONFIG) -> RepoConfig:
    """Read gitgate.yaml; a complaint names the line of the key it is about."""
    try:
        return _repo_config(text, file)
    except ConfigError as exc:
        raise _located(exc, text) from None


def _repo_config(text: str | None, file: str) -> RepoConfig:
    if text is None:
        return RepoConfig()
    data = _mapping(text, file)
    _reject_unknown(data, _REPO_KEYS, file)
    defaults = _optional_mapping(data.get("defaults"), file, "defaults") or {}
    _reject_unknown(defaults, _DEFAULT_KEYS, file, "defaults.")
    paths = _str_list(data.get("paths"), file, "paths") or (".",)
    for path in paths:
        if path.startswith("/") or ".." in path.split("/"):
            raise ConfigError(f"paths entry {path!r} must stay inside the repo", file=file)
    gates_path = _optional_str(data.get("gatesPath"), file, "gatesPath") or "gates"
    if gates_path.startswith("/") or ".." in gates_path.split("/") or not gates_path.strip("/."):
        raise ConfigError(f"gatesPath {gates_path!r} must be a folder inside the repo (not the "
                          "repo itself)", file=file)
    return RepoConfig(
        paths=tuple(p.strip("/") or "." for p in paths),
        gates_path=gates_path.strip("/"),
        gates_path_configured="gatesPath" in data,
        default_namespace=_optional_str(defaults.get("namespace"), file, "defaults.namespace")
        or "default",
        default_placement=_optional_mapping(defaults.get("placement"), file, "defaults.placement"),
        default_labels=_labels(defaults.get("labels"), file, "defaults.labels"),
        default_rollout=parse_rollout(defaults.get("rollout"), file, "defaults.rollout"),
        default_rollout_at=(file, key_line(text, ("defaults", "rollout")) or 0)
        if "rollout" in defaults else ("", 0),
        tenancy=parse_tenancy(data, file),
        provenance=parse_provenance(data, file),
        charts=parse_chart_policy(data.get("charts"), file),
    )


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
    _reject_unknown(value, _CHARTS_KEYS, file, "charts.")
    size = value.get("maxSize", DEFAULT_MAX_CHART_BYTES)
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ConfigError("charts.maxSize must be a positive number of bytes", file=file)
    items = value.get("repositories") or []
    if not isinstance(items, list):
        raise ConfigError("charts.repositories must be a list of {url, ...}", file=file)
    entries = []
    for index, item in enumerate(items):  # 0-based, as every path in a message
        where = f"charts.repositories[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be a mapping", file=file)
        _reject_unknown(item, _CHART_REPO_KEYS, file, f"{where}.")
        url = _optional_str(item.get("url"), file, f"{where}.url")
        if url is None or url_parts(url) is None:
            raise ConfigError(f"{where}.url must be an https:// chart repository or an oci:// "
                              "registry path, without user, query or fragment", file=file)
        credentials = _optional_mapping(item.get("credentials"), file, f"{where}.credentials")
        cred_file = cred_secret = None
        if credentials is not None:
            if len(credentials) != 1 or not set(credentials) <= {"file", "secret"}:
                raise ConfigError(f"{where}.credentials must name them, never hold them: "
                                  "{file: /path/on/gitgate's/host} or {secret: NAME} (a "
                                  "Secret in gitgate's namespace)", file=file)
            if "file" in credentials:
                cred_file = _host_path(str(credentials["file"]), file,
                                       f"{where}.credentials.file")
            else:
                cred_secret = _optional_str(credentials.get("secret"), file,
                                            f"{where}.credentials.secret")
        ca_file = _optional_str(item.get("caFile"), file, f"{where}.caFile")
        tenants = item.get("tenants")
        verify, key_file, key_secret = _chart_keyring(item, url, file, where)
        entries.append(ChartRepository(
            url.rstrip("/"), _optional_str(item.get("name"), file, f"{where}.name") or "",
            cred_file, cred_secret,
            _host_path(ca_file, file, f"{where}.caFile") if ca_file else None,
            None if tenants is None else _str_list(tenants, file, f"{where}.tenants"),
            verify, key_file, key_secret))
    return ChartPolicy(tuple(entries), size)


def _chart_keyring(item: dict[str, Any], url: str, file: str,
                   where: str) -> tuple[bool, str | None, str | None]:
    """`verify: true` with `keyring: {file: PATH} | {secret: NAME}`: (verify, file, secret)."""
    verify = item.get("verify", False)
    if not isinstance(verify, bool):
        raise ConfigError(f"{where}.verify must be true or false", file=file)
    keyring = _optional_mapping(item.get("keyring"), file, f"{where}.keyring")
    if not verify:
        if keyring is not None:
            raise ConfigError(f"{where}.keyring is only used with verify: true", file=file)
        return False, None, None
    if url.startswith(OCI):
        raise ConfigError(f"{where}.verify: provenance files are checked for chart "
                          "repositories (https); an oci:// registry's charts are pinned by "
                          "their digest in chart.lock.yaml", file=file)
    if keyring is None or len(keyring) != 1 or not set(keyring) <= {"file", "secret"}:
        raise ConfigError(f"{where}.verify: true needs keyring: {{file: /path/on/gitgate's/"
                          "host}} or {secret: NAME} (its `keyring` key): the OpenPGP public "
                          "keys the charts' provenance files are checked with", file=file)
    if "file" in keyring:
        return True, _host_path(str(keyring["file"]), file, f"{where}.keyring.file"), None
    return True, None, _optional_str(keyring.get("secret"), file, f"{where}.keyring.secret")


def parse_chart_ref(value: Any, file: str) -> ChartRef | None:
    """`helm: {repo: https://..., chart: NAME, version: X}` or
    `helm: {chart: oci://registry/path/NAME, version: X}`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError("helm must be {repo: https://..., chart: NAME, version: X} or "
                          "{chart: oci://registry/path/NAME, version: X}", file=file)
    _reject_unknown(value, _HELM_KEYS, file, "helm.")
    chart = _optional_str(value.get("chart"), file, "helm.chart")
    version = value.get("version")
    if not isinstance(version, str) or not version.strip():
        raise ConfigError("helm.version must be a version or a range, as a string (quote "
                          "it: version: \"6.5.0\")", file=file)
    if chart is None:
        raise ConfigError("helm.chart must name the chart", file=file)
    repo = _optional_str(value.get("repo"), file, "helm.repo")
    if chart.startswith(OCI):
        if repo is not None:
            raise ConfigError("helm.repo goes with a chart repository's chart name; an oci:// "
                              "chart names its registry itself", file=file)
        repo, _, chart = chart.rpartition("/")
        if url_parts(repo) is None or repo == OCI.rstrip("/"):
            raise ConfigError("helm.chart must be oci://registry/path/NAME", file=file)
    elif repo is None or not repo.startswith("https://") or url_parts(repo) is None:
        raise ConfigError("helm.repo must be the https:// URL of a chart repository (or name "
                          "an oci:// chart in helm.chart)", file=file)
    if not _CHART_NAME.match(chart):
        raise ConfigError(f"helm.chart {chart!r} is not a chart name (lowercase letters, "
                          "digits, '-', '_' and '.')", file=file)
    return ChartRef(repo.rstrip("/"), chart, version.strip())


def _repo_path(value: Any, file: str, key: str) -> str | None:
    path = _optional_str(value, file, key)
    if path is not None and (path.startswith("/") or ".." in path.split("/")):
        raise ConfigError(f"{key} {path!r} must be a file inside the repo", file=file)
    return path


def parse_provenance(data: dict[str, Any], file: str) -> Provenance | None:
    """`verify: {commits: true, allowedSigners: FILE, allowedGpgKeys: FILE}` and
    `gates: {signers: [alice@example.com]}`."""
    verify = _optional_mapping(data.get("verify"), file, "verify")
    gates = _optional_mapping(data.get("gates"), file, "gates")
    if verify is None and gates is None:
        return None
    verify = verify or {}
    _reject_unknown(verify, _VERIFY_KEYS, file, "verify.")
    _reject_unknown(gates or {}, {"signers"}, file, "gates.")
    commits = verify.get("commits", True)
    if not isinstance(commits, bool):
        raise ConfigError("verify.commits must be true or false", file=file)
    found = Provenance(_repo_path(verify.get("allowedSigners"), file, "verify.allowedSigners"),
                       _repo_path(verify.get("allowedGpgKeys"), file, "verify.allowedGpgKeys"),
                       commits and bool(verify),
                       _str_list((gates or {}).get("signers"), file, "gates.signers"))
    if not (found.allowed_signers or found.allowed_gpg_keys) and (
            found.commits or found.gate_signers):
        raise ConfigError("verify needs allowedSigners (SSH keys) or allowedGpgKeys (OpenPGP "
                          "public keys): the keys the signatures are checked against", file=file)
    if gates is not None and not found.gate_signers:
        raise ConfigError("gates.signers names nobody: list the principals, emails or key ids "
                          "(of verify's allowed signers) who may change a freeze", file=file)
    return found


def parse_rollout(value: Any, file: str, key: str) -> RolloutSpec | None:
    """`rollout: {waves: [{clusters: [a]}, {clusters: [b, c]}], bake: 5m,
    progressDeadline: 10m, onFailure: hold}`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a mapping", file=file)
    _reject_unknown(value, _ROLLOUT_KEYS, file, f"{key}.")
    waves_value = value.get("waves")
    if not isinstance(waves_value, list) or not waves_value:
        raise ConfigError(f"{key}.waves must be a non-empty list of {{clusters: [names]}} or "
                          "{labelSelector: {matchLabels: {...}}}", file=file)
    waves: list[Wave] = []
    seen: set[str] = set()
    for index, wave_value in enumerate(waves_value):
        wave = _wave(wave_value, file, f"{key}.waves[{index}]")
        twice = sorted(seen & set(wave.clusters))
        if twice:
            raise ConfigError(f"{key}.waves[{index}]: cluster(s) {', '.join(twice)} already "
                              "in an earlier wave", file=file)
        seen |= set(wave.clusters)
        waves.append(wave)
    on_failure = value.get("onFailure", "hold")
    if on_failure not in ON_FAILURE:
        raise ConfigError(f"{key}.onFailure must be one of {', '.join(ON_FAILURE)}, not "
                          f"{on_failure!r}", file=file)
    durations = {}
    for field_name, default in (("bake", "5m"), ("progressDeadline", "10m")):
        text = value.get(field_name, default)
        try:
            durations[field_name] = parse_duration(str(text))
        except ConfigError as exc:
            raise ConfigError(f"{key}.{field_name}: {exc.message}", file=file) from None
    return RolloutSpec(tuple(waves), durations["bake"], durations["progressDeadline"],
                       on_failure)


def _wave(value: Any, file: str, where: str) -> Wave:
    """`{clusters: [member1]}` or `{labelSelector: {matchLabels: {...}, matchExpressions:
    [...]}}` (a selector over Karmada's Cluster objects, resolved at each pass)."""
    if not isinstance(value, dict) or len(value) != 1 or not (
            set(value) <= {"clusters", "labelSelector"}):
        raise ConfigError(f"{where} must be {{clusters: [member cluster names]}} or "
                          "{labelSelector: {matchLabels: {...}, matchExpressions: [...]}}",
                          file=file)
    if "clusters" in value:
        names = _str_list(value["clusters"], file, f"{where}.clusters")
        if not names:
            raise ConfigError(f"{where}.clusters names no cluster", file=file)
        return Wave(names)
    return Wave(selector=_selector(value["labelSelector"], file, f"{where}.labelSelector"))


def _selector(value: Any, file: str, where: str) -> ClusterSelector:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where} must be a mapping with matchLabels and/or "
                          "matchExpressions", file=file)
    _reject_unknown(value, {"matchLabels", "matchExpressions"}, file, f"{where}.")
    labels = _labels(value.get("matchLabels") or {}, file, f"{where}.matchLabels")
    expressions = value.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ConfigError(f"{where}.matchExpressions must be a list", file=file)
    requirements = []
    for index, item in enumerate(expressions):
        at = f"{where}.matchExpressions[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ConfigError(f"{at} must be {{key, operator, values}}", file=file)
        _reject_unknown(item, {"key", "operator", "values"}, file, f"{at}.")
        operator = item.get("operator")
        if operator not in OPERATORS:
            raise ConfigError(f"{at}.operator must be one of {', '.join(OPERATORS)}, not "
                              f"{operator!r}", file=file)
        values = _str_list(item.get("values") or [], file, f"{at}.values")
        if (operator in ("In", "NotIn")) != bool(values):
            raise ConfigError(f"{at}: {operator} " + ("needs values" if not values else
                                                      "takes no values"), file=file)
        requirements.append(Requirement(item["key"], operator, values))
    if not labels and not requirements:
        raise ConfigError(f"{where} selects nothing: give matchLabels or matchExpressions "
                          "(an empty selector would choose every cluster)", file=file)
    return ClusterSelector(tuple(sorted(labels.items())), tuple(requirements))


def parse_bundle_options(text: str | None, file: str, repo: RepoConfig) -> BundleOptions:
    """Read a bundle.yaml; the repo defaults fill what it leaves out. A complaint names the
    line of the key it is about."""
    try:
        options = _bundle_options(text, file, repo)
    except ConfigError as exc:
        raise _located(exc, text) from None
    if options.clusters and text:  # each entry's line, for what rendering finds wrong in it
        options = replace(options, clusters=tuple(
            replace(c, line=key_line(text, ("clusters", str(i))))
            for i, c in enumerate(options.clusters)))
    return options


def _bundle_options(text: str | None, file: str, repo: RepoConfig) -> BundleOptions:
    data = _mapping(text, file) if text is not None else {}
    _reject_unknown(data, _BUNDLE_KEYS, file)
    split = _optional_str(data.get("split"), file, "split")
    if split is not None and split not in SPLIT_MODES:
        raise ConfigError(f"split must be one of {sorted(SPLIT_MODES)}, not {split!r}",
                          file=file)
    values = _optional_mapping(data.get("values"), file, "values") or {}
    for path in _str_list(data.get("valuesFiles"), file, "valuesFiles") + (
            (data["dir"],) if isinstance(data.get("dir"), str) else ()):
        if path.startswith("/") or ".." in path.split("/"):
            raise ConfigError(f"{path!r} must be a path inside the bundle's folder",
                              file=file)
    name = _optional_str(data.get("name"), file, "name")
    if name is not None and not _BUNDLE_NAME.match(name):
        raise ConfigError(f"name {name!r} must be lowercase letters, digits, '-' and '.' "
                          "(it names Kubernetes objects)", file=file)
    return BundleOptions(
        name=name,
        namespace=_optional_str(data.get("namespace"), file, "namespace") or repo.default_namespace,
        release_name=_optional_str(data.get("releaseName"), file, "releaseName"),
        values_files=_str_list(data.get("valuesFiles"), file, "valuesFiles"),
        values=values,
        kustomize_dir=_optional_str(data.get("dir"), file, "dir"),
        placement=None if data.get("placement") == NO_PLACEMENT else
        _optional_mapping(data.get("placement"), file, "placement") or repo.default_placement,
        unplaced=data.get("placement") == NO_PLACEMENT,
        labels={**repo.default_labels, **_labels(data.get("labels"), file, "labels")},
        depends_on=_str_list(data.get("dependsOn"), file, "dependsOn"),
        rollout=parse_rollout(data.get("rollout"), file, "rollout") or repo.default_rollout,
        split=split,
        clusters=parse_customizations(data.get("clusters"), file),
        rollout_at=(file, key_line(text, ("rollout",)) or 0) if text is not None
        and "rollout" in data else repo.default_rollout_at,
        chart=_published_chart(data, file),
    )


def _published_chart(data: dict[str, Any], file: str) -> ChartRef | None:
    chart = parse_chart_ref(data.get("helm"), file)
    if chart is not None and data.get("dir") is not None:
        raise ConfigError("helm names a published chart and dir a kustomize folder: a source "
                          "is one or the other", file=file)
    return chart


def parse_customizations(value: Any, file: str) -> tuple[Customization, ...]:
    """`clusters: [{clusters: [member2] | labelSelector: {...}, values: {...},
    patches: [{target: {kind, name, ...}, patch: <JSON 6902 list or strategic merge>}]}]`."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise ConfigError("clusters must be a non-empty list of {clusters: [names] or "
                          "labelSelector: {...}, values: {...}, patches: [...]}", file=file)
    out = []
    named: set[str] = set()
    for index, item in enumerate(value):
        where = f"clusters[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be a mapping", file=file)
        _reject_unknown(item, _CUSTOMIZATION_KEYS, file, f"{where}.")
        chosen = _wave({k: v for k, v in item.items() if k in ("clusters", "labelSelector")},
                       file, where)
        twice = sorted(named & set(chosen.clusters))
        if twice:
            raise ConfigError(f"{where}: cluster(s) {', '.join(twice)} already customized by "
                              "an earlier entry; merge the two entries", file=file)
        named |= set(chosen.clusters)
        values = _optional_mapping(item.get("values"), file, f"{where}.values") or {}
        patches = _patches(item.get("patches"), file, f"{where}.patches")
        if not values and not patches:
            raise ConfigError(f"{where} changes nothing: give values (Helm sources) or "
                              "patches", file=file)
        out.append(Customization(chosen.clusters, chosen.selector, values, patches))
    return tuple(out)


def _patches(value: Any, file: str, where: str) -> tuple[Manifest, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"{where} must be a list of {{target: {{kind, name}}, patch: ...}}",
                          file=file)
    out = []
    for index, item in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(item, dict) or "patch" not in item:
            raise ConfigError(f"{at} must be {{target: {{kind, name, ...}}, patch: a JSON 6902 "
                              "list or a strategic-merge mapping}}", file=file)
        _reject_unknown(item, _PATCH_KEYS, file, f"{at}.")
        patch = item["patch"]
        target = _optional_mapping(item.get("target"), file, f"{at}.target")
        if target is not None:
            _reject_unknown(target, _TARGET_KEYS, file, f"{at}.target.")
        if isinstance(patch, list):
            if target is None:
                raise ConfigError(f"{at}: a JSON 6902 patch needs a target", file=file)
            for op_index, op in enumerate(patch):
                if not isinstance(op, dict) or not isinstance(op.get("path"), str) or (
                        op.get("op") not in ("add", "remove", "replace", "move", "copy",
                                             "test")):
                    raise ConfigError(f"{at}.patch[{op_index}] must be {{op, path, value}} "
                                      "(RFC 6902)", file=file)
        elif not isinstance(patch, dict):
            raise ConfigError(f"{at}.patch must be a JSON 6902 list or a strategic-merge "
                              "mapping", file=file)
        out.append({"patch": patch, **({"target": target} if target is not None else {})})
    return tuple(out)
