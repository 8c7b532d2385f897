"""Which commits decide a file's content at a head, counted from a trusted revision.

The commit that decides a file is the one that brought its content into the history being
judged, never the newest commit anywhere that touched it (a gate signer's old commit on a
branch nobody merged would then speak for a merge that takes its version). The walk goes down
from the head, one parent per commit, to the trusted revision:
- when the head's history contains it, along the ancestry path (commits that have it in their
  history): the first parent while it is on that path, else the first parent that is. A merge
  whose first parent is a stale branch and whose other parent is the trusted revision is
  compared with the trusted revision, so the merge decides what it drops;
- otherwise (a rewritten history) along the first parents, to a commit the trusted revision's
  history holds or to the first commit.
A commit of the walk decides a file when its version differs from the parent it is compared
with (a merge that brings a file's content in decides it), or when it is a merge that keeps
that parent's version while another parent's side had changed the file since the two forked
(a criss-cross merge has several fork points: a change since any of them counts; parents with
no fork point in common count as changed). Paths are read NUL-separated (`-z`): a name
outside ASCII is never quoted out of the comparison."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import git


@dataclass(frozen=True)
class Step:
    """One commit of the walk, the parent it is compared with (None: the first commit), and
    its other parents."""

    commit: str
    parent: str | None
    others: tuple[str, ...]


def changed_paths(repo: git.Repo, older: str | None, newer: str) -> set[str]:
    """The paths whose content differs between two revisions (`older` None: every path of
    `newer`), renames counted as a removal and an addition."""
    flags = ("-r", "-z", "--no-renames", "--name-only", "--no-commit-id")
    listed = (repo.git.diff_tree(*flags, older, newer) if older is not None
              else repo.git.diff_tree(*flags, "--root", newer))
    return set(filter(None, str(listed).split("\0")))


def walk(repo: git.Repo, base: str, head: str, rewritten: bool) -> list[Step]:
    """The commits from `head` down to `base` (the module's rule), newest first."""
    parents: dict[str, tuple[str, ...]] = {}
    for row in str(repo.git.rev_list("--parents", head, f"^{base}")).splitlines():
        listed_commit, *rest = row.split()
        parents[listed_commit] = tuple(rest)
    on_path = {base} if rewritten else {base, *str(repo.git.rev_list(
        "--ancestry-path", head, f"^{base}")).split()}
    steps = []
    commit: str | None = head
    while commit is not None and commit in parents:
        listed = parents[commit]
        chosen = (listed[0] if listed else None) if rewritten else next(
            (p for p in listed if p in on_path), None)
        steps.append(Step(commit, chosen, tuple(dict.fromkeys(
            p for p in listed if p != chosen))))
        commit = chosen
    return steps


def deciders(repo: git.Repo, base: str, head: str, paths: Iterable[str],
             rewritten: bool) -> dict[str, list[str]]:
    """For each of `paths`: the commits of the walk that decide it, newest first."""
    wanted = set(paths)
    found: dict[str, list[str]] = {p: [] for p in wanted}
    for step in walk(repo, base, head, rewritten):
        decided = changed_paths(repo, step.parent, step.commit) & wanted
        for other in step.others:
            dropped = (changed_paths(repo, other, step.commit) & wanted) - decided
            if dropped:
                decided |= dropped & _changed_on_side(repo, step.parent, other, dropped)
        for path in decided:
            found[path].append(step.commit)
    return found


def _changed_on_side(repo: git.Repo, parent: str | None, other: str,
                     paths: set[str]) -> set[str]:
    """Which of `paths` `other` changed since it forked from `parent` (every one of them when
    the two share no fork point)."""
    if parent is None:
        return set(paths)
    try:
        forks = str(repo.git.merge_base("--all", parent, other)).split()
    except git.GitCommandError:  # no common history
        forks = []
    if not forks:
        return set(paths)
    changed: set[str] = set()
    for fork in forks:
        changed |= changed_paths(repo, fork, other) & paths
    return changed


def touched(repo: git.Repo, base: str, head: str, rewritten: bool) -> set[str]:
    """Every path some commit of the walk changed, also those whose content is the same at
    both ends (a gate added and removed again between two fetches)."""
    found: set[str] = set()
    for step in walk(repo, base, head, rewritten):
        found |= changed_paths(repo, step.parent, step.commit)
    return found
