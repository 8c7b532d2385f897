"""The fetch stage, before rendering: the charts a source needs from elsewhere (its published
chart, its Chart.yaml's chart repository and `oci://` dependencies), each checked against
the lock, against the allow-list for the source's tenant (before any request), and put in
the content-addressed store when missing, verified against the locked digest. Rendering
then uses the stored archives as local files and reaches nothing. `resolve` is what
`gitgate lock` does: a version range resolved once, to a version and a digest."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitgate.charts.credentials import SecretReader, credentials_reader
from gitgate.charts.download import Transport
from gitgate.charts.provenance import ProvenanceChecker
from gitgate.charts.remote import Remote
from gitgate.charts.semver import best_match
from gitgate.charts.store import ChartStore, sha256_digest
from gitgate.errors import ChartError, ConfigError, GitgateError, Reason
from gitgate.model import Source, SourceKind, join
from gitgate.model.chartspec import (
    CHART_LOCK,
    PUBLISHED,
    ChartPolicy,
    ChartRef,
    ChartRepository,
    LockedChart,
)
from gitgate.model.tenantrules import owner_of
from gitgate.model.tenantspec import Tenancy, Tenant
from gitgate.source.chartlock import is_remote, lock_line
from gitgate.source.config import BUNDLE_CONFIG
from gitgate.source.tree import RepoTree
from gitgate.yamlio import YamlSyntaxError, key_line, load_one


@dataclass(frozen=True)
class Need:
    """A chart the source fetches, and where the repo asks for it."""

    dependency: str  # PUBLISHED, or the Chart.yaml dependency's alias or name
    ref: ChartRef
    file: str
    line: int | None


@dataclass(frozen=True)
class Fetched:
    """A locked chart, in the store."""

    locked: LockedChart
    archive: Path


def _vendored(tree: RepoTree, folder: str) -> set[str]:
    charts_dir = join(folder, "charts")
    return {f[len(charts_dir) + 1:].split("/", 1)[0] for f in tree.under(charts_dir)
            if f != charts_dir}


def needs_of(source: Source, tree: RepoTree) -> list[Need]:
    """What `source` fetches (nothing for a chart whose dependencies are all vendored)."""
    if source.kind is not SourceKind.HELM:
        return []
    bundle_file = join(source.path, BUNDLE_CONFIG)
    if source.options.chart is not None:
        said = tree.read(bundle_file) or ""
        return [Need(PUBLISHED, source.options.chart, bundle_file,
                     key_line(said, ("helm", "version")) or key_line(said, ("helm",)))]
    chart_file = join(source.path, "Chart.yaml")
    text = tree.read(chart_file)
    try:
        metadata = load_one(text) if text is not None else None
    except YamlSyntaxError:
        return []  # rendering says what is wrong with it
    dependencies = metadata.get("dependencies") if isinstance(metadata, dict) else None
    present = _vendored(tree, source.path)
    needs = []
    for index, dep in enumerate(dependencies if isinstance(dependencies, list) else []):
        if not isinstance(dep, dict):
            continue
        name, repository = str(dep.get("name") or ""), str(dep.get("repository") or "")
        if not name or not is_remote(repository):
            continue
        if name in present or any(p.startswith(f"{name}-") and p.endswith(".tgz")
                                  for p in present):
            continue  # vendored: rendered from the repo as it is
        line = key_line(text or "", ("dependencies", str(index)))
        version = str(dep.get("version") or "")
        if not version:
            raise ChartError(f"dependency {name!r} ({repository}) gives no version",
                             reason=Reason.CHART_NOT_LOCKED, file=chart_file, line=line)
        needs.append(Need(str(dep.get("alias") or name),
                          ChartRef(repository.rstrip("/"), name, version), chart_file, line))
    return needs


def tenant_name(source: Source, tenancy: Tenancy) -> str:
    owner = owner_of(source.path, tenancy)
    return owner.name if isinstance(owner, Tenant) else owner


def _lock_command(source: Source) -> str:
    return f"run `gitgate lock {source.path}` and commit {join(source.path, CHART_LOCK)}"


def checked_lock(source: Source, tree: RepoTree, needs: list[Need]) -> list[LockedChart]:
    """The lock entry of each need, in order; ChartError naming the file and line of the
    first that is missing or stale (the lock asks for another chart or range), or of an
    entry nothing needs."""
    locked = {e.dependency: e for e in source.options.locked}
    lock_file = join(source.path, CHART_LOCK)
    lock_text = tree.read(lock_file) if source.options.locked else None
    found = []
    for need in needs:
        entry = locked.pop(need.dependency, None)
        if entry is None:
            vendor = ("" if need.dependency == PUBLISHED else
                      f" (or vendor it: `helm dependency build {source.path}`, and commit the "
                      "charts/ folder)")
            raise ChartError(f"{need.ref.where} (version {need.ref.version}) is not locked: "
                             f"{_lock_command(source)}{vendor}", reason=Reason.CHART_NOT_LOCKED,
                             file=need.file, line=need.line)
        if entry.ref != need.ref:
            raise ChartError(
                f"{lock_file} locks {entry.ref.where} {entry.ref.version}, and {need.file} "
                f"asks for {need.ref.where} {need.ref.version}: the lock is stale; "
                f"{_lock_command(source)}", reason=Reason.CHART_NOT_LOCKED, file=need.file,
                line=need.line)
        found.append(entry)
    for extra in locked.values():
        raise ChartError(f"{lock_file} locks {extra.ref.where}, which the source no longer "
                         f"asks for: the lock is stale; {_lock_command(source)}",
                         reason=Reason.CHART_NOT_LOCKED, file=lock_file,
                         line=lock_line(lock_text, extra.dependency, source.options.locked))
    return found


def _at(exc: ChartError, need: Need) -> ChartError:
    exc.file, exc.line = need.file, need.line
    return exc


class ChartFetcher:
    """The fetch stage for every source of a pass: one store, one transport (its requests
    counted), credentials read as the allow-list names them. `in_force`: the allow-list and
    the tenants to fetch by when they are not the checkout's own (gitgate.yaml as a trusted
    revision has it: `source.configinforce`)."""

    def __init__(self, store: ChartStore, *, transport: Transport | None = None,
                 secret_reader: SecretReader | None = None,
                 in_force: tuple[ChartPolicy, Tenancy] | None = None,
                 helm: str | None = None) -> None:
        self.store = store
        self.in_force = in_force
        self.transport = transport or Transport()
        self.secrets = credentials_reader(secret_reader)
        self.provenance = ProvenanceChecker(secret_reader, helm)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _remote(self, source: Source, policy: ChartPolicy, tenancy: Tenancy) -> Remote:
        return Remote(self.transport, policy, tenant_name(source, tenancy), self.secrets)

    def _one_at_a_time(self, digest: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(digest, threading.Lock())

    def fetch(self, source: Source, tree: RepoTree, policy: ChartPolicy,
              tenancy: Tenancy) -> tuple[Fetched, ...]:
        """The locked charts of `source`, in the store; ChartError (naming the file, the
        line and the repository) for the first that cannot be had as locked."""
        needs = needs_of(source, tree)
        if not needs and not source.options.locked:
            return ()
        entries = checked_lock(source, tree, needs)
        remote = self._remote(source, policy, tenancy)
        fetched = []
        for need, entry in zip(needs, entries, strict=True):
            try:
                allowed = remote.entry(need.ref)  # refused before anything is sent, cached or not
                fetched.append(Fetched(entry, self._stored(remote, entry, policy, allowed)))
            except ChartError as exc:
                raise _at(exc, need) from None
        return tuple(fetched)

    def _verified(self, remote: Remote, allowed: ChartRepository, ref: ChartRef,
                  version: str, digest: str, data: bytes) -> None:
        """With `verify: true` on its allow-list entry: the chart's provenance file (kept in
        the store, else fetched) verifies the archive with the entry's keyring."""
        if not allowed.verify:
            return
        kept = self.store.provenance(digest)
        provenance = kept if kept is not None else remote.provenance(ref, version)
        self.provenance.check(allowed, ref, version, data, provenance)
        if kept is None:
            self.store.put_provenance(provenance, digest)  # kept once it verified

    def _stored(self, remote: Remote, entry: LockedChart, policy: ChartPolicy,
                allowed: ChartRepository) -> Path:
        with self._one_at_a_time(entry.digest):
            data = self.store.get(entry.digest)
            if data is None:
                data = remote.archive(entry.ref, entry.version, entry.digest, policy.max_bytes)
                actual = sha256_digest(data)
                if actual != entry.digest:
                    raise ChartError(
                        f"{entry.ref.where} {entry.version}: the repository's archive has the "
                        f"digest {actual}, not the locked {entry.digest}; nothing of it is "
                        "used (if the chart was republished on purpose, lock it again)",
                        reason=Reason.CHART_FETCH_FAILED)
                self.store.put(data, entry.digest)
            if len(data) > policy.max_bytes:
                raise ChartError(f"{entry.ref.where} {entry.version} is {len(data)} bytes, "
                                 f"more than the {policy.max_bytes} allowed (charts.maxSize)",
                                 reason=Reason.CHART_FETCH_FAILED)
            self._verified(remote, allowed, entry.ref, entry.version, entry.digest, data)
            return self.store.folder / "sha256" / f"{entry.hex}.tgz"

    def resolve(self, source: Source, tree: RepoTree, policy: ChartPolicy,
                tenancy: Tenancy, *, upgrade: bool = False) -> tuple[LockedChart, ...]:
        """The lock `source` needs: each need whose lock entry still asks for the same is
        kept as it is (a range is resolved once), unless `upgrade`; the others resolved to
        the highest version the range allows, fetched, and pinned by their digest."""
        kept = {e.dependency: e for e in source.options.locked}
        remote = self._remote(source, policy, tenancy)
        out = []
        for need in needs_of(source, tree):
            old = kept.get(need.dependency)
            if old is not None and old.ref == need.ref and not upgrade:
                out.append(old)
                continue
            try:
                out.append(self._resolved(remote, need, policy))
            except ChartError as exc:
                raise _at(exc, need) from None
            except ConfigError as exc:
                raise ChartError(f"{need.ref.version!r} is not a version or a range",
                                 reason=Reason.CHART_NOT_LOCKED, file=need.file,
                                 line=need.line) from exc
        return tuple(out)

    def _resolved(self, remote: Remote, need: Need, policy: ChartPolicy) -> LockedChart:
        ref = need.ref
        version = best_match(ref.version, remote.versions(ref))
        if version is None:
            raise ChartError(f"{ref.where}: no published version matches {ref.version!r}",
                             reason=Reason.CHART_NOT_LOCKED)
        published = remote.published(ref, version)
        data = remote.archive(ref, version, published.digest, policy.max_bytes)
        digest = sha256_digest(data)
        if published.digest is not None and published.digest != digest:
            raise ChartError(f"{ref.where} {version}: the archive's digest is {digest}, and "
                             f"the repository says {published.digest}",
                             reason=Reason.CHART_FETCH_FAILED)
        self._verified(remote, remote.entry(ref), ref, version, digest, data)
        self.store.put(data, digest)
        return LockedChart(need.dependency, ref, version, digest)


def fetch_stage(fetcher: ChartFetcher | None, tree: RepoTree, policy: ChartPolicy,
                tenancy: Tenancy) -> Callable[[Source], tuple[Fetched, ...] | GitgateError]:
    """For the render pipeline: a source's fetched charts, or the error that fails it.
    Without a fetcher nothing is fetched (rendering then says what is missing)."""

    def run(source: Source) -> tuple[Fetched, ...] | GitgateError:
        if fetcher is None or source.kind is not SourceKind.HELM:
            return ()
        allowed, tenants = fetcher.in_force or (policy, tenancy)
        try:
            return fetcher.fetch(source, tree, allowed, tenants)
        except GitgateError as exc:
            return exc

    return run
