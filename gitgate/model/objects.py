"""Objects and sources: what is rendered, where from, and what went wrong. Plain, frozen."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from gitgate.errors import Reason
from gitgate.model.chartspec import ChartRef, LockedChart
from gitgate.model.rolloutspec import RolloutSpec
from gitgate.model.shared import shared

if TYPE_CHECKING:
    from gitgate.model.clusterspec import Customization, ObjectOverride

Manifest = dict[str, Any]

class SourceKind(StrEnum):
    HELM = "helm"
    KUSTOMIZE = "kustomize"
    RAW = "raw"

FIELD_MANAGER = "gitgate"  # the server-side apply field manager of every gitgate write


class ObjectRef(NamedTuple):
    """Identity of a Kubernetes object: group, kind, namespace ('' if cluster-scoped), name.
    A named tuple: refs are built, hashed and sorted by the ten thousand in a pass."""

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, manifest: Manifest) -> ObjectRef:
        api_version = str(manifest.get("apiVersion", ""))
        meta = manifest.get("metadata") or {}
        return cls(shared(api_version.rpartition("/")[0]), str(manifest.get("kind", "")),
                   str(meta.get("namespace") or ""), str(meta.get("name", "")))

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{kind} {self.namespace}/{self.name}" if self.namespace else f"{kind} {self.name}"


def content_hash(obj: Manifest) -> str:
    """sha256 of the object's canonical JSON: what the inventory records of each write."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
                          ).hexdigest()


class Hashed(NamedTuple):
    """An object to write, with its identity and content hash worked out once."""

    ref: ObjectRef
    obj: Manifest
    hash: str

    @classmethod
    def of(cls, obj: Manifest) -> Hashed:
        return cls(ObjectRef.of(obj), obj, content_hash(obj))


@dataclass(frozen=True)
class Problem:
    """An error or warning tied to a source and, where known, a file and line."""

    source: str
    message: str
    file: str | None = None
    line: int | None = None
    reason: Reason = Reason.RENDER_FAILED

    def location(self) -> str:
        where = self.file or self.source
        return f"{where}:{self.line}" if self.line else where

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "file": self.file, "line": self.line,
                "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class BundleOptions:
    """What a `bundle.yaml` (merged over `gitgate.yaml` defaults) says about a source."""

    name: str | None = None
    namespace: str | None = None
    release_name: str | None = None
    values_files: tuple[str, ...] = ()
    values: Manifest = field(default_factory=dict)
    kustomize_dir: str | None = None
    placement: Manifest | None = None
    unplaced: bool = False  # `placement: none`: it stays on the control plane on purpose
    labels: dict[str, str] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    split: str | None = None
    rollout: RolloutSpec | None = None
    clusters: tuple[Customization, ...] = ()  # per set of member clusters
    # where `rollout` is written, as the repo has it: (`apps/web/bundle.yaml`, line), or the
    # `defaults.rollout` of gitgate.yaml it comes from; line 0 when not known
    rollout_at: tuple[str, int] = ("", 0)
    chart: ChartRef | None = None  # `helm:`: a published chart, fetched (not in the repo)
    # chart.lock.yaml beside bundle.yaml: the published chart's and the remote dependencies'
    # resolved versions and archive digests (part of the bundle's digest)
    locked: tuple[LockedChart, ...] = ()


@dataclass(frozen=True)
class Source:
    """A folder of the repo that renders into objects.

    `path` is the repo-relative POSIX path of the folder ('.' for the root);
    `files` lists the YAML files of a raw source (repo-relative).
    """

    path: str
    kind: SourceKind
    options: BundleOptions
    bundle_name: str
    files: tuple[str, ...] = ()
    pause_reason: str | None = None
    pause_folder: str | None = None  # the folder above whose pause file holds it


@dataclass(frozen=True)
class BundleFacts:
    """One bundle of a summarized source: its name, the digest grouping gave it (of its full
    objects, per-cluster changes included), why it failed, and its objects as summarized."""

    name: str
    digest: str
    objects: tuple[Manifest, ...] = ()
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class SourceSummary:
    """A source of another replica's shard (`run --shard`), as this replica keeps it: what
    the rules across sources and bundles read of it, and nothing else (`bundle.summary`)."""

    bundles: tuple[BundleFacts, ...]
    # the scope each of its kinds had when it was placed (`render.pipeline.used_scopes`):
    # once one differs, the summary is stale, and the source is rendered again
    scopes: tuple[tuple[tuple[str, str], bool | None], ...]
    warnings: tuple[Problem, ...] = ()  # what placing it warned of


@dataclass(frozen=True)
class RenderedSource:
    source: Source
    objects: tuple[Manifest, ...]
    problems: tuple[Problem, ...] = ()
    seconds: float = 0.0  # how long rendering took
    # per `clusters:` customization, what the source renders for those clusters (until
    # `finish` compiles them into `overrides`)
    variants: tuple[tuple[Manifest, ...], ...] = ()
    overrides: tuple[ObjectOverride, ...] = ()  # per customized object
    summary: SourceSummary | None = None  # set: `objects` are summaries, already placed

    @property
    def failed(self) -> bool:
        return bool(self.problems)
