"""Read a repo folder from disk into a RepoTree (the only I/O discovery needs)."""

from __future__ import annotations

import bisect
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from gitgate.errors import GitgateError, SourceError
from gitgate.model import GateText, Unreadable, is_under


@dataclass(frozen=True)
class RepoTree:
    """A snapshot of a repo's file names.

    files: repo-relative POSIX paths of regular files and of symlinks that stay inside the repo.
    escaping_links: repo-relative paths of symlinks whose target is outside the repo (or broken).
    read: returns a file's text by repo-relative path, or None when it does not exist.
    dir_links: symlinks to folders inside the repo (not walked), each to its repo-relative
    target.
    """

    files: frozenset[str]
    escaping_links: frozenset[str]
    read: Callable[[str], str | None]
    dir_links: Mapping[str, str] = field(default_factory=dict)
    read_bytes: Callable[[str], bytes | None] = lambda rel: None  # for digests

    # ------------------------------------------------------------------ the pass's index
    @cached_property
    def _sorted_files(self) -> list[str]:
        return sorted(self.files)

    @cached_property
    def _digests(self) -> dict[str, str]:
        return {}

    def under(self, folder: str) -> list[str]:
        """The files in `folder` and below, sorted; from one sorted list of the repo built
        once per tree (a binary search, not a walk of every file)."""
        ordered = self._sorted_files
        if folder == ".":
            return list(ordered)
        found = [folder] if folder in self.files else []
        prefix = folder + "/"
        start = bisect.bisect_left(ordered, prefix)
        end = bisect.bisect_left(ordered, folder + "0")  # "0" sorts right after "/"
        return found + ordered[start:end]

    def digest(self, file: str) -> str:
        """The SHA-256 of a file's bytes, computed once per tree however many sources read
        the file (a kustomize base shared by every overlay)."""
        known = self._digests.get(file)
        if known is None:
            known = hashlib.sha256(self.read_bytes(file) or b"").hexdigest()
            self._digests[file] = known
        return known

    def escape_from(self, folder: str) -> str | None:
        """The first symlink a tool reading `folder` would follow out of the repo, directly
        or through in-repo folder links (a link to a folder that holds an escaping link)."""
        seen: set[str] = set()
        todo = [folder]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            escaping = sorted(link for link in self.escaping_links if is_under(link, current))
            if escaping:
                return escaping[0]
            todo += [target for link, target in self.dir_links.items()
                     if is_under(link, current)]
        return None


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
    dir_links: dict[str, str] = {}
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
                    dir_links[rel] = full.resolve().relative_to(root).as_posix()
                    continue
            files.add(rel)

    inside = str(root) + os.sep

    def read_bytes(rel: str) -> bytes | None:
        path = os.path.join(root, rel)
        if rel in escaping or not os.path.isfile(path) or not os.path.realpath(
                path).startswith(inside):  # a link swapped in after the scan stays out
            return None
        with open(path, "rb") as handle:
            return handle.read()

    def read(rel: str) -> str | None:
        """The file's text; SourceError when it is not UTF-8 (never guessed or replaced)."""
        raw = read_bytes(rel)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{rel} is not UTF-8 text (a bad byte at offset {exc.start}); "
                              "save it as UTF-8", file=rel) from None

    return RepoTree(frozenset(files), frozenset(escaping), read, dir_links, read_bytes)


GATE_SUFFIXES = (".yaml", ".yml", ".json")
NOT_GATES = ("README.md", ".gitkeep")  # the only other files a gates folder may hold


def gate_texts(tree: RepoTree, gates_path: str, *, configured: bool = False
               ) -> dict[str, GateText]:
    """Every file under the gates folder, fail closed: `.yaml`, `.yml` and `.json` (any case)
    are read as gates; anything else there (another extension, a symlink leaving the repo, a
    symlinked folder) is Unreadable and holds every bundle, as does a configured gates folder
    that is missing or is itself a symlink."""
    files: dict[str, GateText] = {}
    for file in tree.files:
        if not is_under(file, gates_path):
            continue
        name = file.rsplit("/", 1)[-1]
        if name.lower().endswith(GATE_SUFFIXES):
            try:
                files[file] = tree.read(file)
            except GitgateError as exc:
                files[file] = Unreadable(exc.message)
        elif name not in NOT_GATES:
            files[file] = Unreadable(
                f"{file} is in the gates folder but is not a gate file (.yaml, .yml or "
                ".json): gitgate cannot tell what it holds, so every bundle is held until it "
                "is renamed or moved out")
    for link in tree.escaping_links:
        if is_under(link, gates_path):
            files[link] = Unreadable(f"{link} is a symlink leading out of the repo (or "
                                     "nowhere): replace it with the gate file itself")
    for link in tree.dir_links:
        if is_under(link, gates_path) or is_under(gates_path, link):
            files[link] = Unreadable(f"{link} is a symlinked folder: gitgate does not read "
                                     "gates through links; put the gate files in "
                                     f"{gates_path}/ itself")
    if configured and not files and not any(is_under(f, gates_path) for f in tree.files):
        files[gates_path] = Unreadable(
            f"gatesPath {gates_path!r} (gitgate.yaml) does not exist: create it (an empty "
            "folder with a .gitkeep) or remove gatesPath")
    return files
