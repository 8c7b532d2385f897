"""Parse and validate `gitgate.yaml` (repo settings) and `bundle.yaml` (per-source options)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from gitgate.errors import ConfigError
from gitgate.model import BundleOptions, Manifest, RolloutSpec
from gitgate.model.analysisspec import Provider
from gitgate.model.chartspec import (
    ChartPolicy,
    ChartRef,
)
from gitgate.model.tenantrules import owner_of
from gitgate.model.tenantspec import Tenancy, Tenant
from gitgate.source.analysisconfig import parse_providers, refused_provider
from gitgate.source.chartconfig import parse_chart_policy, parse_chart_ref
from gitgate.source.configfields import (
    labels_of,
    optional_mapping,
    optional_str,
    read_mapping,
    reject_unknown,
    str_list,
)
from gitgate.source.rolloutconfig import parse_customizations, parse_rollout
from gitgate.source.tenantconfig import parse_tenancy
from gitgate.yamlio import key_line

REPO_CONFIG = "gitgate.yaml"
BUNDLE_CONFIG = "bundle.yaml"

_DEFAULT_KEYS = {"namespace", "placement", "labels", "rollout"}
_REPO_KEYS = {"apiVersion", "kind", "paths", "gatesPath", "defaults", "tenants", "untenanted",
              "verify", "gates", "charts", "analysis"}
_VERIFY_KEYS = {"commits", "allowedSigners", "allowedGpgKeys"}
_BUNDLE_KEYS = {"name", "namespace", "releaseName", "valuesFiles", "values", "dir",
                "placement", "labels", "dependsOn", "split", "rollout", "clusters", "helm"}
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
    analysis_providers: tuple[Provider, ...] = ()  # the Prometheus servers analyses may query


@dataclass(frozen=True)
class Provenance:
    """Who may sign what, as gitgate.yaml declares it. The loop reads it from the last
    revision it verified (never from the head it is about to judge), so only a signed commit
    changes it; the key files are read from that revision too."""

    allowed_signers: str | None = None  # SSH keys (git's allowed-signers format), repo path
    allowed_gpg_keys: str | None = None  # armored OpenPGP public keys, repo path
    commits: bool = False  # only a head an allowed key signed is applied
    gate_signers: tuple[str, ...] = ()  # principals, emails or key ids of the allowed signers


NO_PLACEMENT = "none"  # `placement: none`: the bundle stays on the control plane on purpose


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
    data = read_mapping(text, file)
    reject_unknown(data, _REPO_KEYS, file)
    defaults = optional_mapping(data.get("defaults"), file, "defaults") or {}
    reject_unknown(defaults, _DEFAULT_KEYS, file, "defaults.")
    paths = str_list(data.get("paths"), file, "paths") or (".",)
    for path in paths:
        if path.startswith("/") or ".." in path.split("/"):
            raise ConfigError(f"paths entry {path!r} must stay inside the repo", file=file)
    gates_path = optional_str(data.get("gatesPath"), file, "gatesPath") or "gates"
    if gates_path.startswith("/") or ".." in gates_path.split("/") or not gates_path.strip("/."):
        raise ConfigError(f"gatesPath {gates_path!r} must be a folder inside the repo (not the "
                          "repo itself)", file=file)
    providers = parse_providers(data.get("analysis"), file)
    return RepoConfig(
        paths=tuple(p.strip("/") or "." for p in paths),
        gates_path=gates_path.strip("/"),
        gates_path_configured="gatesPath" in data,
        default_namespace=optional_str(defaults.get("namespace"), file, "defaults.namespace")
        or "default",
        default_placement=optional_mapping(defaults.get("placement"), file, "defaults.placement"),
        default_labels=labels_of(defaults.get("labels"), file, "defaults.labels"),
        default_rollout=parse_rollout(defaults.get("rollout"), file, "defaults.rollout",
                                      providers),
        default_rollout_at=(file, key_line(text, ("defaults", "rollout")) or 0)
        if "rollout" in defaults else ("", 0),
        tenancy=parse_tenancy(data, file),
        provenance=parse_provenance(data, file),
        charts=parse_chart_policy(data.get("charts"), file),
        analysis_providers=providers,
    )


def _repo_path(value: Any, file: str, key: str) -> str | None:
    path = optional_str(value, file, key)
    if path is not None and (path.startswith("/") or ".." in path.split("/")):
        raise ConfigError(f"{key} {path!r} must be a file inside the repo", file=file)
    return path


def parse_provenance(data: dict[str, Any], file: str) -> Provenance | None:
    """`verify: {commits: true, allowedSigners: FILE, allowedGpgKeys: FILE}` and
    `gates: {signers: [alice@example.com]}`."""
    verify = optional_mapping(data.get("verify"), file, "verify")
    gates = optional_mapping(data.get("gates"), file, "gates")
    if verify is None and gates is None:
        return None
    verify = verify or {}
    reject_unknown(verify, _VERIFY_KEYS, file, "verify.")
    reject_unknown(gates or {}, {"signers"}, file, "gates.")
    commits = verify.get("commits", True)
    if not isinstance(commits, bool):
        raise ConfigError("verify.commits must be true or false", file=file)
    found = Provenance(_repo_path(verify.get("allowedSigners"), file, "verify.allowedSigners"),
                       _repo_path(verify.get("allowedGpgKeys"), file, "verify.allowedGpgKeys"),
                       commits and bool(verify),
                       str_list((gates or {}).get("signers"), file, "gates.signers"))
    if not (found.allowed_signers or found.allowed_gpg_keys) and (
            found.commits or found.gate_signers):
        raise ConfigError("verify needs allowedSigners (SSH keys) or allowedGpgKeys (OpenPGP "
                          "public keys): the keys the signatures are checked against", file=file)
    if gates is not None and not found.gate_signers:
        raise ConfigError("gates.signers names nobody: list the principals, emails or key ids "
                          "(of verify's allowed signers) who may change a freeze", file=file)
    return found


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
    data = read_mapping(text, file) if text is not None else {}
    reject_unknown(data, _BUNDLE_KEYS, file)
    split = optional_str(data.get("split"), file, "split")
    if split is not None and split not in SPLIT_MODES:
        raise ConfigError(f"split must be one of {sorted(SPLIT_MODES)}, not {split!r}",
                          file=file)
    values = optional_mapping(data.get("values"), file, "values") or {}
    for path in str_list(data.get("valuesFiles"), file, "valuesFiles") + (
            (data["dir"],) if isinstance(data.get("dir"), str) else ()):
        if path.startswith("/") or ".." in path.split("/"):
            raise ConfigError(f"{path!r} must be a path inside the bundle's folder",
                              file=file)
    name = optional_str(data.get("name"), file, "name")
    if name is not None and not _BUNDLE_NAME.match(name):
        raise ConfigError(f"name {name!r} must be lowercase letters, digits, '-' and '.' "
                          "(it names Kubernetes objects)", file=file)
    rollout = parse_rollout(data.get("rollout"), file, "rollout",
                            repo.analysis_providers) or repo.default_rollout
    if rollout is not None and rollout.analysis:
        owner = owner_of(file.rpartition("/")[0] or ".", repo.tenancy)
        refused = refused_provider(rollout.analysis, owner.name if isinstance(owner, Tenant)
                                   else owner)
        if refused:
            raise ConfigError(refused, file=file)
    return BundleOptions(
        name=name,
        namespace=optional_str(data.get("namespace"), file, "namespace") or repo.default_namespace,
        release_name=optional_str(data.get("releaseName"), file, "releaseName"),
        values_files=str_list(data.get("valuesFiles"), file, "valuesFiles"),
        values=values,
        kustomize_dir=optional_str(data.get("dir"), file, "dir"),
        placement=None if data.get("placement") == NO_PLACEMENT else
        optional_mapping(data.get("placement"), file, "placement") or repo.default_placement,
        unplaced=data.get("placement") == NO_PLACEMENT,
        labels={**repo.default_labels, **labels_of(data.get("labels"), file, "labels")},
        depends_on=str_list(data.get("dependsOn"), file, "dependsOn"),
        rollout=rollout,
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


