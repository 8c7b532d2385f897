"""The chart locks an earlier revision had: what `plan` compares a bundle's locked charts
with (the revision its record says is live, or `--since REV`), to show `podinfo 6.5.0 →
6.6.0`. Read from Git's objects; the checkout is not touched."""

from __future__ import annotations

import posixpath
from pathlib import Path

import git

from gitgate.errors import ConfigError
from gitgate.model import join
from gitgate.model.chartspec import CHART_LOCK, LockedChart
from gitgate.source.chartlock import parse_chart_lock


class LockHistory:
    """Chart locks of the repo at `root` (a folder of a Git work tree) at any revision it
    has; None for a revision it does not have (a shallow clone, 'unknown', a dirty tree's
    uncommitted state)."""

    def __init__(self, root: Path):
        self._repo: git.Repo | None
        self._prefix = ""
        try:
            self._repo = git.Repo(root, search_parent_directories=True)
            top = Path(str(self._repo.working_tree_dir)).resolve()
            folder = Path(root).resolve().relative_to(top).as_posix()
            self._prefix = "" if folder == "." else folder
        except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
            self._repo = None
        self._seen: dict[tuple[str, str], tuple[LockedChart, ...] | None] = {}

    def at(self, revision: str, source: str) -> tuple[LockedChart, ...] | None:
        """The entries of `source`'s lock at `revision` (empty: it had none)."""
        revision = revision.removesuffix("-dirty")
        if self._repo is None or not revision or revision == "unknown":
            return None
        key = (revision, source)
        if key not in self._seen:
            self._seen[key] = self._read(revision, source)
        return self._seen[key]

    def _read(self, revision: str, source: str) -> tuple[LockedChart, ...] | None:
        assert self._repo is not None
        file = join(source, CHART_LOCK)
        path = posixpath.join(self._prefix, file) if self._prefix else file
        try:
            self._repo.git.cat_file("-e", f"{revision}^{{commit}}")
        except git.GitCommandError:
            return None
        try:
            text = str(self._repo.git.show(f"{revision}:{path}"))
        except git.GitCommandError:
            return ()
        try:
            return parse_chart_lock(text, file)
        except ConfigError:
            return None
