"""Read a repo folder from disk into a RepoTree (the only I/O discovery needs)."""

from __future__ import annotations

import bisect
import hashlib
import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from gitgate.errors import GitgateError, SourceError
from gitgate.model import GateText, Unreadable, is_under, join


@dataclass(frozen=True)
class Resolved:
    """Where a repo path leads with every symlink on it followed: `path`, its real
    repo-relative path; or `exit`, the part of it (a link, the checkout's `.git`, `..`) through
    which it leaves the repo."""

    path: str
    exit: str | None = None


@dataclass(frozen=True)
class RepoTree:
    """A snapshot of a repo's file names.

    files: repo-relative POSIX paths of regular files and of symlinks that stay inside the repo.
    escaping_links: repo-relative paths of symlinks whose target is outside the repo (or broken).
    read: returns a file's text by repo-relative path, or None when it does not exist.
    dir_links: symlinks to folders inside the repo (not walked), each to its repo-relative
    target.
    git_dir: the root holds the checkout's `.git` (never scanned: its config may hold the
    credentials the loop fetches with).
    """

    files: frozenset[str]
    escaping_links: frozenset[str]
    read: Callable[[str], str | None]
    dir_links: Mapping[str, str] = field(default_factory=dict)
    read_bytes: Callable[[str], bytes | None] = lambda rel: None  # for digests
    # every file's name and stat stamp, the links, in one hash: equal fingerprints mean equal
    # contents, but for the files in `racy` ("": a racy file could not be read)
    fingerprint: str = ""
    # the files changed too recently for their stamps to tell (`RACY_SECONDS`), with the
    # SHA-256 of their bytes read right after the scan: Git compares such files' contents
    racy: Mapping[str, str] = field(default_factory=dict)
    git_dir: bool = False

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

    def resolve(self, path: str) -> Resolved:
        """Follow every symlink on a repo-relative `path`, part by part, as the filesystem
        would (each link's real target was taken with `realpath` by the scan, so a chain of
        links is one step): the real path, or where it leaves the repo. A `..` climbs from
        where the links led; above the root, or into the checkout's `.git`, is outside."""
        done = "."
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if done == ".":
                    return Resolved(path, "..")
                done = done.rpartition("/")[0] or "."
                continue
            here = join(done, part)
            if here == GIT_DIR or here in self.escaping_links:
                return Resolved(path, here)
            done = self.dir_links.get(here, here)
        return Resolved(done)

    def reached(self, folder: str) -> list[str]:
        """The folders a tool reading everything in `folder` reads, following folder links
        inside the repo: `folder`, then each link's target, in the order found."""
        seen: list[str] = []
        todo = [folder]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.append(current)
            todo += [target for link, target in sorted(self.dir_links.items(), reverse=True)
                     if is_under(link, current)]
        return seen

    def escape_from(self, folder: str) -> str | None:
        """The first symlink a tool reading `folder` would follow out of the repo, directly
        or through in-repo folder links (a link to a folder that holds an escaping link)."""
        for current in self.reached(folder):
            escaping = sorted(link for link in self.escaping_links if is_under(link, current))
            if escaping:
                return escaping[0]
        return None


def is_inside(root: Path, candidate: Path) -> bool:
    try:
        candidate.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


@dataclass
class _Scan:
    """What a walk of the repo found (see `RepoTree`); `identity` is each file's (device,
    inode) as scanned, of a link's target for an in-repo file link."""

    root: str
    only: tuple[str, ...] = ()  # when set, only these repo paths (and what leads to them)
    files: set[str] = field(default_factory=set)
    escaping: set[str] = field(default_factory=set)
    dir_links: dict[str, str] = field(default_factory=dict)
    identity: dict[str, tuple[int, int]] = field(default_factory=dict)
    stamps: dict[str, tuple[int, ...]] = field(default_factory=dict)
    git_dir: bool = False

    def note(self, rel: str, info: os.stat_result) -> None:
        self.files.add(rel)
        self.identity[rel] = (info.st_dev, info.st_ino)
        self.stamps[rel] = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns,
                            info.st_ctime_ns)

    def walk(self, folder: str, prefix: str) -> None:
        """One folder, then its sub-folders, dot-folders included (helm's `.Files` and
        kustomize read them); links are recorded, never followed. Only the checkout's own
        `.git` is left out."""
        with os.scandir(folder) as entries:
            found = sorted(entries, key=lambda e: e.name)
        for entry in found:
            rel = prefix + entry.name
            if self.only and not any(is_under(rel, o) or is_under(o, rel) for o in self.only):
                continue
            if entry.is_symlink():
                self.link(entry, rel)
            elif rel == GIT_DIR:
                self.git_dir = True
            elif entry.is_dir(follow_symlinks=False):
                self.walk(entry.path, rel + "/")
            else:
                self.note(rel, entry.stat(follow_symlinks=False))

    def link(self, entry: os.DirEntry[str], rel: str) -> None:
        """A link is in the repo when its target is, and is not the checkout's `.git` (its
        config may hold the credentials the loop fetches with)."""
        target = os.path.realpath(entry.path)
        if (not os.path.exists(target) or not _within(self.root, target)
                or _within(os.path.join(self.root, GIT_DIR), target)):
            self.escaping.add(rel)
        elif os.path.isdir(target):
            self.dir_links[rel] = os.path.relpath(target, self.root).replace(os.sep, "/")
        else:
            self.note(rel, os.stat(target))


GIT_DIR = ".git"  # the checkout's own Git folder: never a file of the repo

# A file changed this close to the scan may change again within the same tick of the
# filesystem's clock and keep its stamp (Git's "racy clean" files): its stamp alone does not
# tell, so its content is hashed too. The coarsest common clock (FAT's) ticks every 2 s.
RACY_SECONDS = 3


def _fingerprint(scan: _Scan, now_ns: int) -> tuple[str, tuple[str, ...]]:
    """One hash of every file's name and stamp (device, inode, size, modification and
    change times: as Git's index tells a changed file), the links leaving the repo and the
    folder links; and the files whose times are within `RACY_SECONDS` of `now_ns` (or
    later), whose stamps do not tell."""
    racy_after = now_ns - RACY_SECONDS * 1_000_000_000
    digest = hashlib.sha256()
    racy = []
    for rel in sorted(scan.stamps):
        stamp = scan.stamps[rel]
        if stamp[3] >= racy_after or stamp[4] >= racy_after:
            racy.append(rel)
        digest.update(f"{rel}\0{stamp}\n".encode())
    for rel in sorted(scan.escaping):
        digest.update(f"escaping\0{rel}\n".encode())
    for rel, target in sorted(scan.dir_links.items()):
        digest.update(f"folder-link\0{rel}\0{target}\n".encode())
    digest.update(f"git\0{scan.git_dir}\n".encode())
    return digest.hexdigest(), tuple(racy)


def _within(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _readable_path(root: str, real: str) -> bool:
    return _within(root, real) and not _within(os.path.join(root, GIT_DIR), real)


def scan_repo(root: Path, only: tuple[str, ...] = (),
              clock: Callable[[], int] = time.time_ns) -> RepoTree:
    """List a repo without following symlinks; only the checkout's `.git` is skipped. With
    `only`, just those repo-relative paths (a file, or a folder and everything below it) and
    the folders and links on the way to them: a quick look at a few files each pass.
    `clock`: the wall clock in nanoseconds, that file times are compared with (injected)."""
    started = clock()
    scan = _Scan(str(root.resolve()), only)
    scan.walk(scan.root, "")
    root_text, escaping, identity = scan.root, frozenset(scan.escaping), scan.identity

    def read_bytes(rel: str) -> bytes | None:
        """The bytes of a file that is inside the repo now, not only when it was scanned: the
        file opened must be the one scanned (same device and inode), or its real path must
        still lie in the repo (a file saved anew since); a link swapped in stays out."""
        if rel in escaping:
            return None
        path = os.path.join(root_text, rel)
        try:  # non-blocking: opening a FIFO for reading would wait for a writer
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            if identity.get(rel) != (info.st_dev, info.st_ino) and not _readable_path(
                    root_text, os.path.realpath(path)):
                return None
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

    fingerprint, racy_files = _fingerprint(scan, started)
    racy: dict[str, str] = {}
    for rel in racy_files:  # read now: a later edit in the same clock tick shows in them
        content = read_bytes(rel)
        if content is None:  # gone or swapped since the scan: no fingerprint at all
            fingerprint, racy = "", {}
            break
        racy[rel] = hashlib.sha256(content).hexdigest()
    return RepoTree(frozenset(scan.files), escaping, read, scan.dir_links, read_bytes,
                    fingerprint, racy, scan.git_dir)


GATE_SUFFIXES = (".yaml", ".yml", ".json")


def _hidden_folder(rel: str) -> str | None:
    """The first dot-folder on a repo-relative path (its last part, the file, excluded)."""
    parts = rel.split("/")[:-1]
    hidden = next((i for i, part in enumerate(parts) if part.startswith(".")), None)
    return None if hidden is None else "/".join(parts[:hidden + 1])


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
        hidden = _hidden_folder(file[len(gates_path) + 1:])
        if hidden:
            files[file] = Unreadable(
                f"{file} is in the hidden folder {gates_path}/{hidden} of the gates folder: "
                "gitgate cannot tell whether it is meant to hold, so every bundle is held "
                "until it is moved "
                f"into {gates_path}/ or out of the gates folder")
        elif name.lower().endswith(GATE_SUFFIXES):
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
