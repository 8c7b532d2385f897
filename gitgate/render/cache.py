"""Incremental rendering: a source is rendered again only when one of its inputs changed.

The key of a source is a pure function of explicit inputs: the content of every file it loads
(its folder; for kustomize every folder of its kustomization graph), its options (bundle.yaml
merged over gitgate.yaml defaults), the symlinks that leave the repo, and the tool versions.
Its files come from the tree's index (one sorted list per pass, searched by folder) and their
hashes are computed once per pass, so keying every source is linear in the repo's size.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from typing import Any

from gitgate.errors import GitgateError
from gitgate.memo import Memo
from gitgate.model import RenderedSource, Source, SourceKind, is_under, join
from gitgate.render.diskcache import RenderDisk
from gitgate.render.kustomize_guard import check_kustomization
from gitgate.render.reuse import WholeInputs
from gitgate.render.tools import Tools
from gitgate.source.tree import RepoTree


def input_folders(source: Source, tree: RepoTree) -> list[str]:
    if source.kind is SourceKind.KUSTOMIZE:
        folder = join(source.path, source.options.kustomize_dir or ".").removesuffix("/.")
        return sorted({source.path, *check_kustomization(tree, folder)})
    return [source.path]


def _fields(value: object) -> object:
    """JSON for what `json` cannot write: a dataclass as its fields (no deep copy, unlike
    `dataclasses.asdict`), anything else as its text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return str(value)


def cache_key(source: Source, tree: RepoTree, tools: Tools | None) -> str | None:
    """None when the inputs cannot be named (an unsafe kustomization: render to get the
    error)."""
    try:
        folders = input_folders(source, tree)
    except GitgateError:
        return None
    digest = hashlib.sha256()
    options = json.dumps(source, sort_keys=True, default=_fields)
    digest.update(options.encode())
    digest.update(repr((tools.helm_version, tools.kustomize_version) if tools else None).encode())
    if source.kind is SourceKind.RAW:
        inputs = sorted({*source.files, join(source.path, "bundle.yaml")} & tree.files)
    else:
        inputs = sorted({f for folder in folders for f in tree.under(folder)})
    for file in inputs:
        digest.update(f"{file}\0{tree.digest(file)}\0".encode())
    for link in sorted(tree.escaping_links):
        if any(is_under(link, folder) for folder in folders):
            digest.update(f"link\0{link}\0".encode())
    return digest.hexdigest()


class RenderCache:
    """Rendered sources by key, kept for the sources of the last repo rendered; and the memo
    of what later stages derived from them (`gitgate.memo`), on the same rounds."""

    def __init__(self, disk: RenderDisk | None = None) -> None:
        self.memo = Memo()
        self.disk = disk  # full renders kept on disk too (`render.diskcache`)
        self._entries: dict[str, RenderedSource] = {}
        self._used: set[str] = set()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        # the scopes of kinds the last round placed under ((group, kind) -> namespaced)
        self.scopes: tuple[tuple[tuple[str, str], bool], ...] = ()
        # the last whole render and what it depended on (`render.reuse`), and how many
        # passes it was handed back to
        self.whole: tuple[WholeInputs, Any] | None = None
        self.reused = 0

    def get(self, key: str | None) -> RenderedSource | None:
        with self._lock:
            found = self._entries.get(key) if key else None
            if found is not None:
                self.hits += 1
                self._used.add(key)  # type: ignore[arg-type]
            else:
                self.misses += 1
            return found

    def put(self, key: str | None, rendered: RenderedSource) -> None:
        """Failures are not kept: a tool timeout may pass on its own."""
        if key is None or rendered.failed:
            return
        with self._lock:
            self._entries[key] = rendered
            self._used.add(key)

    def hand_back(self) -> None:
        """A pass took the last whole render as it was: no source was looked up."""
        with self._lock:
            self.hits = self.misses = 0
            self.reused += 1

    def start_round(self) -> None:
        self.memo.next_pass()
        with self._lock:
            self.hits = self.misses = 0
            self._used = set()

    def end_round(self) -> None:
        """Forget what this round did not use (sources that changed or left)."""
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if k in self._used}
