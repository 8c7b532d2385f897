"""The Git edge of commit-to-pause: commits that touch exactly the gate files (GitPython)."""

from __future__ import annotations

from pathlib import Path

import git

from gitgate.errors import GitOpError


def open_repo(path: Path) -> git.Repo:
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitOpError(f"{path} is not inside a Git repository") from None


def _work_tree(repo: git.Repo) -> Path:
    if repo.working_tree_dir is None:
        raise GitOpError("the repository has no work tree (a bare repository?)")
    return Path(repo.working_tree_dir).resolve()


def ensure_branch(repo: git.Repo) -> str:
    if repo.head.is_detached:
        raise GitOpError("HEAD is detached: check out the branch gitgate watches "
                         "(git switch main) and run the command again")
    return repo.active_branch.name


def commit_only(repo: git.Repo, paths: list[Path], message: str) -> str:
    """Commit exactly `paths` as they are on disk (added, changed or deleted); other staged
    changes stay staged and are not part of the commit. Uses the user's git identity."""
    top = _work_tree(repo)
    rels = [str(p.resolve().relative_to(top)) if p.exists()
            else str(p.parent.resolve().relative_to(top) / p.name) for p in paths]
    try:
        for path, rel in zip(paths, rels, strict=True):
            if path.exists():
                repo.git.add("--", rel)
            else:
                repo.git.rm("--cached", "--quiet", "--ignore-unmatch", "--", rel)
        repo.git.commit("--only", "--quiet", "-m", message, "--", *rels)
    except git.GitCommandError as exc:
        detail = (exc.stderr or str(exc)).strip()
        if "tell me who you are" in detail or "user.email" in detail:
            detail = "no git identity: set it with git config user.name / user.email"
        raise GitOpError(f"could not commit {', '.join(rels)}: {detail}") from None
    return repo.head.commit.hexsha


def push(repo: git.Repo, branch: str, remote: str = "origin") -> None:
    try:
        results = repo.remote(remote).push(branch)
    except (ValueError, git.GitCommandError) as exc:
        raise GitOpError(f"push to {remote} failed: {exc}; the commit is kept locally") from None
    for result in results:
        if result.flags & result.ERROR:
            raise GitOpError(f"push to {remote} failed: {result.summary.strip()}; the commit is "
                             "kept locally")
