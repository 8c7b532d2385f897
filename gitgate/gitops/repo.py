"""The Git edge of commit-to-pause: commits that touch exactly the gate files (GitPython)."""

from __future__ import annotations

import io
import re
import tarfile
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


def identity(repo: git.Repo) -> str:
    """Who commits here, as git itself resolves it (`Name <email>`: GIT_AUTHOR_NAME and
    GIT_AUTHOR_EMAIL, as a CI job sets them, else the config), or "" when git has no identity
    (the commit itself then fails, saying how to set one)."""
    try:
        said = repo.git.var("GIT_AUTHOR_IDENT")
    except git.GitCommandError:
        return ""
    return re.sub(r"\s+\d+\s+[+-]\d{4}$", "", str(said).strip())


def is_signed(repo: git.Repo, commit: str) -> bool:
    """Whether the commit carries a signature at all (git signs when `commit.gpgsign` is set;
    whose key it is, a verifying loop decides)."""
    try:
        raw = str(repo.git.cat_file("commit", commit))
    except git.GitCommandError:
        return False
    return any(line.startswith("gpgsig") for line in raw.split("\n\n", 1)[0].splitlines())


def git_said_of(exc: git.GitCommandError) -> str:
    """What git said, in one line, without GitPython's wrapping (`Cmd('git') failed due to
    exit code(1)`, the command line)."""
    parts = [re.sub(r"^\s*(?:stderr|stdout): '(.*)'\s*$", r"\1", str(part or ""), flags=re.S)
             for part in (exc.stderr, exc.stdout)]
    said = " ".join(" ".join(parts).split())
    if "tell me who you are" in said or "user.email" in said:
        return "no git identity: set it with git config user.name / user.email"
    if "nothing to commit" in said or "no changes added to commit" in said:
        return "nothing changed (it is already as asked)"
    return said or f"git exited with {exc.status}"


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
        raise GitOpError(f"could not commit {', '.join(rels)}: {git_said_of(exc)}") from None
    return repo.head.commit.hexsha


def _push_once(repo: git.Repo, branch: str, remote: str) -> str | None:
    """None when pushed, else git's reason in one line. git's own output is captured, never
    passed through: a push that is rejected and then succeeds after a rebase must not leave
    "error: failed to push some refs" on the user's terminal."""
    status, out, err = repo.git.push("--porcelain", remote, branch, with_extended_output=True,
                                     with_exceptions=False)
    if status == 0:
        return None
    rejected = [line.split("\t")[-1] for line in str(out).splitlines() if line.startswith("!")]
    last = [line for line in str(err).splitlines() if line.strip()][-1:]
    return (rejected or last or [f"git push exited {status}"])[0].strip()


def unpushed(repo: git.Repo, branch: str, remote: str = "origin") -> list[str]:
    """The one-line summaries of the local commits of `branch` that `remote` does not have
    (fetched first): a push would send them along with a gate."""
    try:
        repo.git.fetch("--quiet", remote, branch)
    except git.GitCommandError as exc:
        detail = (exc.stderr or str(exc)).strip()
        if "couldn't find remote ref" not in detail:
            raise GitOpError(f"could not fetch {branch} from {remote} before pushing "
                             f"({detail.splitlines()[-1] if detail else 'no answer'}); nothing "
                             "was written") from None
        return [_summary(c) for c in repo.iter_commits(branch)]
    return [_summary(c) for c in repo.iter_commits(f"{remote}/{branch}..{branch}")]


def _summary(commit: git.Commit) -> str:
    subject = commit.summary
    return f"{commit.hexsha[:8]} " + (subject.decode("utf-8", "replace")
                                      if isinstance(subject, bytes) else subject)


def push(repo: git.Repo, branch: str, remote: str = "origin", attempts: int = 3) -> int:
    """Push `branch`; when the remote moved on, fetch, rebase the local commit onto it and push
    again (at most `attempts` times). Returns how many rebases it took."""
    for attempt in range(attempts):
        why = _push_once(repo, branch, remote)
        if why is None:
            return attempt
        if attempt == attempts - 1:
            break
        try:
            repo.git.fetch(remote, branch)
            repo.git.rebase("--autostash", f"{remote}/{branch}")
        except git.GitCommandError as exc:
            if (Path(repo.git_dir) / "rebase-merge").exists() or (
                    Path(repo.git_dir) / "rebase-apply").exists():
                repo.git.rebase("--abort")
            detail = (exc.stderr or str(exc)).strip().splitlines()[-1:]
            raise GitOpError(
                f"push to {remote} was rejected ({why}) and the commit does not rebase onto "
                f"{remote}/{branch} ({' '.join(detail)}); the commit is kept locally: run "
                f"`git pull --rebase {remote} {branch}`, resolve, then `git push`") from None
    raise GitOpError(f"push to {remote} failed after {attempts} attempts ({why}); the commit is "
                     f"kept locally: run `git pull --rebase {remote} {branch} && git push`")


def has_uncommitted_changes(repo: git.Repo, path: Path) -> bool:
    """Whether `path` differs from HEAD (staged, unstaged, or not tracked at all)."""
    rel = str(path.resolve().relative_to(_work_tree(repo)))
    return bool(repo.git.status("--porcelain", "--", rel).strip())


def head_snapshot(repo: git.Repo, folder: Path, dest: Path) -> Path:
    """The committed content of `folder` at HEAD, written under `dest` (no work-tree edits, no
    untracked files); returns where `folder` is in it. Links that would leave `dest` are left
    out, as gitgate never follows them."""
    top = _work_tree(repo)
    rel = folder.resolve().relative_to(top)
    archive = io.BytesIO()
    if str(rel) == ".":
        repo.archive(archive, "HEAD", format="tar")
    else:
        repo.archive(archive, "HEAD", format="tar", path=str(rel))
    archive.seek(0)
    with tarfile.open(fileobj=archive) as tar:
        tar.extractall(dest, filter=_inside)
    return dest / rel


def _inside(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    if not hasattr(tarfile, "data_filter"):  # Python before 3.11.4: keep plain files only
        plain = (member.isfile() or member.isdir()) and not Path(member.name).is_absolute()
        return member if plain and ".." not in Path(member.name).parts else None
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None
