"""gitgate.yaml as a loop would keep it in force at a checkout's HEAD (`check`/`plan --since`):
the trust settings a change cannot grant itself, among them where charts may come from and
the credentials they are fetched with, read from the revision the loop trusts when HEAD's
own change of gitgate.yaml would not count."""

from __future__ import annotations

import posixpath
from pathlib import Path

import git

from gitgate.errors import GitgateError, SourceError
from gitgate.source.config import REPO_CONFIG, RepoConfig, parse_repo_config
from gitgate.source.gateguard import Review


def config_in_force(root: Path, review: Review) -> RepoConfig | None:
    """gitgate.yaml at the revision `review` keeps in force (None: HEAD's own, as the
    checkout has it). Raises SourceError when it cannot be read there."""
    revision = review.config_from()
    if revision is None:
        return None
    path = REPO_CONFIG if review.folder == "." else posixpath.join(review.folder, REPO_CONFIG)
    try:
        repo = git.Repo(root, search_parent_directories=True)
        text = str(repo.git.show(f"{revision}:{path}", strip_newline_in_stdout=False))
    except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError):
        text = None
    try:
        return parse_repo_config(text)
    except GitgateError as exc:
        raise SourceError(f"{path} at {revision[:12]} (the revision in force) cannot be read: "
                          f"{exc}") from None
