"""Read a repo folder from disk into a RepoTree (the only I/O discovery needs)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitgate.model import is_under


@dataclass(frozen=True)
class RepoTree:
    """A snapshot of a repo's file names.

    files: repo-relative POSIX paths of regular files and of symlinks that stay inside the repo.
    escaping_links: repo-relative paths of symlinks whose target is outside the repo (or broken).
    read: returns a file's text by repo-relative path, or None when it does not exist.
    """

    files: frozenset[str]
    escaping_links: frozenset[str]
    read: Callable[[str], str | None]


def is_inside(root: Path, candidate: Path) -> bool:
    try:
        candidate.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def scan_repo(root: Path) -> RepoTree:
    """List a repo without following symlinks; dot-directories (.git) are skipped."""
    root = root.resolve()
    files: set[str] = set()
    escaping: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        here = Path(dirpath)
        for name in [*filenames, *(d for d in dirnames if (here / d).is_symlink())]:
            full = here / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                if not full.exists() or not is_inside(root, full):
                    escaping.add(rel)
                    continue
                if full.is_dir():
                    continue
            files.add(rel)

    def read(rel: str) -> str | None:
        path = root / rel
        if rel in escaping or not path.is_file() or not is_inside(root, path):
            return None
        return path.read_text(encoding="utf-8", errors="replace")

    return RepoTree(frozenset(files), frozenset(escaping), read)


def gate_texts(tree: RepoTree, gates_path: str) -> dict[str, str | None]:
    """Text of every YAML file under the gates folder; a symlink leaving the repo reads as
    None (an unreadable gate, which holds everything)."""
    files: dict[str, str | None] = {f: tree.read(f) for f in tree.files
                                    if is_under(f, gates_path) and f.endswith((".yaml", ".yml"))}
    for link in tree.escaping_links:
        if is_under(link, gates_path):
            files[link] = None
    return files
