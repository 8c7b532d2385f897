"""Git read from a checkout on this machine: a folder taken as it is (`LocalCheckout`, for
`apply --wait`), its revision, and which commit changed a bundle's folder."""

from __future__ import annotations

import posixpath
from pathlib import Path

import git


class LocalCheckout:
    """A folder on this machine, taken as it is (`apply --wait` runs the loop over it): its
    revision is read once, so the loop passes again for a transition, not for each edit."""

    def __init__(self, root: Path):
        self.cache_dir = Path(root)
        self.revision = revision_of(self.cache_dir)

    branch = ""  # no branch is followed: the folder is taken as it is

    @property
    def display_url(self) -> str:
        return str(self.cache_dir)

    def sync(self) -> str:
        return self.revision



def revision_of(path: Path) -> str:
    """HEAD's commit id (with `-dirty` when the work tree differs), or 'unknown' outside Git."""
    try:
        repo = git.Repo(path, search_parent_directories=True)
        sha = repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return "unknown"
    if repo.working_tree_dir is None:
        return sha
    relative = Path(path).resolve().relative_to(Path(repo.working_tree_dir).resolve())
    scope = [str(relative)] if str(relative) != "." else []
    dirty = repo.is_dirty(untracked_files=True, path=scope[0] if scope else None)
    return f"{sha}-dirty" if dirty else sha



def content_commit(checkout: Path, since: str, until: str, folder: str,
                   elsewhere: tuple[str, ...] = ()) -> str | None:
    """The newest commit after `since` up to `until` that changed what a bundle renders
    from: a file of its `folder` (its `PAUSE` file aside), else any file outside the
    `elsewhere` folders (the gates); paths are relative to `checkout`. None when Git cannot
    tell: no repo, a revision it does not have (a shallow history), or no such commit."""
    first, last = since.removesuffix("-dirty"), until.removesuffix("-dirty")
    if not first or not last or "unknown" in (first, last):
        return None
    try:
        repo = git.Repo(checkout, search_parent_directories=True)
        top = Path(repo.working_tree_dir or checkout).resolve()
        base = Path(checkout).resolve().relative_to(top).as_posix()
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None

    def inside(path: str) -> str:
        return posixpath.normpath(posixpath.join(base, path))

    shallow = Path(repo.git_dir) / "shallow"
    try:
        cut = set(shallow.read_text().split()) if shallow.exists() else set()
        if cut & set(str(repo.git.rev_list(f"{first}..{last}")).split()):
            return None  # a commit whose parent is not here: what it changed is not known
    except (OSError, git.GitCommandError):
        return None
    own = [f":(top){inside(folder)}", f":(top,exclude){inside(folder)}/PAUSE"]
    rest = [f":(top){inside('.')}", *(f":(top,exclude){inside(p)}" for p in elsewhere)]
    for spec in (own, rest):
        try:
            found = str(repo.git.log("-1", "--format=%H", f"{first}..{last}", "--", *spec))
        except git.GitCommandError:
            return None
        if found.strip():
            return found.strip()
    return None
