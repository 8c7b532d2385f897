"""Which repo a gitgate folder belongs to (`model.ownership.Origin`): its Git repo's `origin`
remote as `repo_identity` writes it, else the checkout's own folder, and the folder's path
inside that repo. Read from Git's config; nothing is written."""

from __future__ import annotations

from pathlib import Path

import git

from gitgate.model.ownership import Origin, local_identity, repo_identity


def repo_origin(root: Path) -> Origin:
    """The origin of the gitgate folder `root`. A folder outside Git is a repo of its own."""
    folder = Path(root).resolve()
    try:
        repo = git.Repo(folder, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return Origin(local_identity(folder.as_posix()), ".")
    top = Path(repo.working_tree_dir or repo.git_dir).resolve()
    try:
        path = folder.relative_to(top).as_posix()
    except ValueError:
        path = "."
    try:
        url = str(repo.remote("origin").url)
    except (ValueError, git.GitError):
        url = ""
    if not url:
        return Origin(local_identity(top.as_posix()), path)
    identity = repo_identity(url)
    if identity is None:  # a local path (or file://): made absolute from the checkout
        local = url.removeprefix("file://")
        identity = local_identity((top / local).resolve().as_posix())
    return Origin(identity, path)
