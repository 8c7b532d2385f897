"""Chart archives on disk, by the sha256 of their bytes: `<folder>/sha256/<hex>.tgz`. A file
is written once, under its digest, after its bytes were checked against it (written aside,
then renamed: a reader never sees half a file); a file whose bytes no longer match its name
is not used. The folder outlives a process (`run --cache-dir`'s `-charts` sibling), so a
restart fetches nothing it already has."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from gitgate.errors import ChartError, Reason


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


CACHE_ENV = "GITGATE_CHART_CACHE"


def default_chart_cache() -> Path:
    """Where commands run by hand keep fetched charts: $GITGATE_CHART_CACHE, else
    $XDG_CACHE_HOME/gitgate/charts (~/.cache/gitgate/charts)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gitgate" / "charts"


class ChartStore:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def _path(self, digest: str) -> Path:
        return self.folder / "sha256" / f"{digest.removeprefix('sha256:')}.tgz"

    def get(self, digest: str) -> bytes | None:
        """The archive with this digest, when kept (and still holding those bytes)."""
        path = self._path(digest)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if sha256_digest(data) != digest:
            path.unlink(missing_ok=True)  # damaged: fetched again
            return None
        return data

    def provenance(self, digest: str) -> bytes | None:
        """The provenance file kept for the archive with this digest (checked at each use,
        against the archive and a keyring: it is kept, not trusted)."""
        try:
            return self._path(digest).with_suffix(".prov").read_bytes()
        except OSError:
            return None

    def put_provenance(self, data: bytes, digest: str) -> None:
        self._write(self._path(digest).with_suffix(".prov"), data)

    def has(self, digest: str) -> bool:
        return self._path(digest).is_file()

    def put(self, data: bytes, digest: str) -> Path:
        """Keep `data` under `digest`; ChartError when its bytes are not that digest."""
        actual = sha256_digest(data)
        if actual != digest:
            raise ChartError(f"the archive's digest is {actual}, not the locked {digest}",
                             reason=Reason.CHART_FETCH_FAILED)
        path = self._path(digest)
        self._write(path, data)
        return path

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(scratch, path)
        except BaseException:
            Path(scratch).unlink(missing_ok=True)
            raise
