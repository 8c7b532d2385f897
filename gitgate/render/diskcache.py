"""Rendered sources kept on disk, by the same key as the render cache (`render.cache`).

A replica of `run --shard` keeps the sources of other replicas as summaries: when it takes
over a replica's bundles, it needs their full objects, and rendering them all again with
helm and kustomize took minutes at 5,000 bundles. The full render of every source is written
here once, when it is rendered, so a takeover (or a restart on the same volume) reads JSON
instead of running the tools.

- A file is named by its key, a SHA-256 of everything the render depends on (`cache_key`),
  and holds that key: a file whose key does not match is not used.
- A source that renders a Secret is never written: Secret values stay in memory alone.
- Failed renders are not written.
- Files whose key no pass used are removed at the end of a pass over the whole repo.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import TypeGuard

from gitgate.model import Manifest, RenderedSource, Source

log = logging.getLogger("gitgate")

FORMAT = 1  # bump when what a file holds changes: older files are then not read


def holds_secret(rendered: RenderedSource) -> bool:
    return any(str(obj.get("kind")) == "Secret" and str(obj.get("apiVersion")) == "v1"
               for group in (rendered.objects, *rendered.variants) for obj in group)


class RenderDisk:
    """Full renders in one folder, one JSON file per key."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self.reads = 0

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str | None, source: Source) -> RenderedSource | None:
        """The render kept under `key`, for `source`; None when there is none usable."""
        if not key:
            return None
        try:
            kept = json.loads(self._path(key).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("a kept render could not be read (%s): rendering again", exc)
            return None
        if not isinstance(kept, dict) or kept.get("key") != key or kept.get("format") != FORMAT:
            return None
        objects, variants = kept.get("objects"), kept.get("variants")
        if not _manifests(objects) or not isinstance(variants, list):
            return None
        groups = [tuple(v) for v in variants if _manifests(v)]
        if len(groups) != len(variants):
            return None
        with self._lock:
            self.reads += 1
        return RenderedSource(source, tuple(objects), variants=tuple(groups))

    def put(self, key: str | None, rendered: RenderedSource) -> None:
        """Keep a successful render that holds no Secret (written whole, then renamed)."""
        if not key or rendered.failed or rendered.summary is not None or holds_secret(rendered):
            return
        text = json.dumps({"format": FORMAT, "key": key, "objects": list(rendered.objects),
                           "variants": [list(v) for v in rendered.variants]})
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".part")
            with os.fdopen(handle, "w") as out:
                out.write(text)
            os.replace(temporary, self._path(key))
        except OSError as exc:
            log.warning("a render could not be kept on disk (%s): a takeover renders it "
                        "again", exc)

    def end_round(self, used: set[str]) -> None:
        """Remove the renders of keys not in `used` (sources that changed or left)."""
        try:
            found = list(self.folder.iterdir())
        except OSError:
            return
        for path in found:
            if path.suffix in (".json", ".part") and path.stem not in used:
                path.unlink(missing_ok=True)


def _manifests(value: object) -> TypeGuard[list[Manifest]]:
    return isinstance(value, list) and all(isinstance(o, dict) for o in value)

