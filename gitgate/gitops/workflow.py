"""Commit-to-pause: `pause`, `resume` and `approve` each change gate files and commit them.
Each returns what it committed; the CLI says it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from git import Repo

from gitgate.errors import ConfigError
from gitgate.gate.evaluate import gate_covers
from gitgate.gitops.gatefile import (
    dump_gate,
    gate_name_for,
    new_gate,
    parse_selector,
    with_approval,
)
from gitgate.gitops.repo import commit_only, ensure_branch, open_repo, push
from gitgate.model import Bundle, Gate
from gitgate.pipeline import plan_checkout
from gitgate.plan import Plan
from gitgate.render.tools import Tools


@dataclass(frozen=True)
class Committed:
    summary: str  # what changed, for people
    sha: str
    branch: str
    pushed: bool


@dataclass(frozen=True)
class GitRepo:
    """The gitgate repo folder, the rendering tools, and whether to push each commit."""

    root: Path
    tools: Tools
    push: bool = False


def _plan(repo: GitRepo, now: datetime) -> tuple[str, Plan]:
    """The repo's gates folder, and its plan at `now`."""
    if not repo.root.is_dir():
        raise ConfigError(f"{repo.root} is not a folder; pass the gitgate repo with --repo")
    checkout = plan_checkout(repo.root, repo.tools, now)
    return checkout.rendered.discovery.config.gates_path, checkout.plan


def _bundles(plan: Plan) -> list[Bundle]:
    return [b.bundle for b in plan.bundles]


def selected_bundles(selector: str, bundles: list[Bundle]) -> list[Bundle]:
    spec = parse_selector(selector)
    probe = Gate("probe", "-", "-", bundles=tuple(spec.get("bundles", ())),
                 match_labels=spec.get("selector", {}).get("matchLabels", {}))
    return [b for b in bundles if gate_covers(probe, b)]


def _branch(repo: GitRepo) -> tuple[Repo, str]:
    """The Git repo and its branch, checked before anything is written."""
    git = open_repo(repo.root)
    return git, ensure_branch(git)


def _commit(repo: GitRepo, checked: tuple[Repo, str], paths: list[Path], message: str,
            summary: str) -> Committed:
    git, branch = checked
    sha = commit_only(git, paths, message)
    if repo.push:
        push(git, branch)
    return Committed(summary, sha, branch, repo.push)


def pause(repo: GitRepo, selector: str, reason: str, now: datetime, *, action: str = "hold",
          until: datetime | None = None, clusters: tuple[str, ...] = ()) -> Committed:
    if until is not None and until <= now:
        raise ConfigError(f"until {until.isoformat()} is in the past: the gate would never hold")
    if clusters and action != "suspend":
        raise ConfigError("--clusters needs --action suspend (hold stops every write)")
    checked = _branch(repo)
    gates_path, plan = _plan(repo, now)
    matched = selected_bundles(selector, _bundles(plan))
    if not matched:
        known = ", ".join(b.name for b in _bundles(plan)) or "none"
        raise ConfigError(f"selector {selector!r} matches no bundle (bundles: {known})")
    taken = {s.gate.name for s in plan.gates} | {p.stem for p in (repo.root / gates_path).glob("*")}
    name = gate_name_for(selector, taken)
    gate = new_gate(name, selector, reason, action=action, until=until, clusters=clusters)
    path = repo.root / gates_path / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_gate(gate), encoding="utf-8")
    covered = ", ".join(b.name for b in matched)
    return _commit(repo, checked, [path], f"pause {selector}: {reason}",
                   f"wrote {path.relative_to(repo.root)}: {action} {covered}")


def pause_until(now: datetime, until: datetime | None, duration: timedelta | None
                ) -> datetime | None:
    return until if until is not None else now + duration if duration is not None else None


def resume(repo: GitRepo, selector: str, now: datetime) -> Committed:
    checked = _branch(repo)
    _, plan = _plan(repo, now)
    matched = {b.name for b in selected_bundles(selector, _bundles(plan))}
    files = sorted({s.gate.file for s in plan.gates
                    if s.gate.name == selector or set(s.covers) & matched})
    if not files:
        raise ConfigError(f"no gate is named or covers {selector!r}; `gitgate gates "
                          f"{repo.root}` lists them")
    paths = [repo.root / file for file in files]
    for path in paths:
        path.unlink()
    return _commit(repo, checked, paths, f"resume {selector}: remove {', '.join(files)}",
                   f"removed {', '.join(files)}")


def approve(repo: GitRepo, bundle: str, now: datetime) -> Committed:
    checked = _branch(repo)
    _, plan = _plan(repo, now)
    item = next((b for b in plan.bundles if b.bundle.name == bundle), None)
    if item is None:
        raise ConfigError(f"no bundle named {bundle!r}")
    if item.bundle.failed:
        raise ConfigError(f"bundle {bundle} does not render; fix it before approving")
    digest = item.verdict.digest
    files = sorted({s.gate.file for s in plan.gates if s.active and bundle in s.covers})
    if not files:
        raise ConfigError(f"no active gate covers {bundle}; nothing to approve")
    paths = [repo.root / file for file in files]
    for path in paths:
        path.write_text(with_approval(path.read_text(encoding="utf-8"), bundle, digest),
                        encoding="utf-8")
    message = f"approve {bundle} {digest[:12]} through {', '.join(files)}"
    return _commit(repo, checked, paths, message, f"approved {bundle} at digest {digest}")
