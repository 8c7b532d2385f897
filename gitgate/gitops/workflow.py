"""Commit-to-pause: `pause`, `resume` and `approve` each change gate files and commit them.
Each returns what it committed; the CLI says it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from git import GitCommandError, Repo

from gitgate.charts.stage import ChartFetcher
from gitgate.charts.store import ChartStore, default_chart_cache
from gitgate.errors import ConfigError, StillHeld
from gitgate.gate.evaluate import gate_covers
from gitgate.gitops.gatefile import (
    dump_gate,
    edited_gate_file,
    gate_name_for,
    new_gate,
    parse_selector,
    with_approval,
    with_reason,
    with_until,
    written_for,
)
from gitgate.gitops.repo import (
    commit_only,
    ensure_branch,
    has_uncommitted_changes,
    head_snapshot,
    identity,
    is_signed,
    open_repo,
    push,
    unpushed,
)
from gitgate.gitops.resume import GateEdit, resume_edits
from gitgate.model import Bundle, Gate
from gitgate.model.nearby import closest_hint
from gitgate.passes.onepass import plan_checkout
from gitgate.plan import Plan
from gitgate.render.tools import Tools
from gitgate.timespec import rfc3339


@dataclass(frozen=True)
class Committed:
    summary: str  # what changed (or would, or why nothing did), for people
    sha: str | None = None  # None: nothing was committed (dry run, already paused)
    branch: str = ""
    pushed: bool = False
    rebased: int = 0  # times the commit was rebased onto a remote that moved on
    remote: str = ""  # the remote a `gitgate run` would follow ("" when the repo has none)
    root: Path | None = None  # the repo folder, for the command that pushes
    signed: bool = False  # git signed the commit (commit.gpgsign): a loop verifying applies it


@dataclass(frozen=True)
class GitRepo:
    """The gitgate repo folder, the rendering tools, and whether to push each commit."""

    root: Path
    tools: Tools
    push: bool = False
    env: tuple[tuple[str, str], ...] = ()  # for git's network commands (credentials)


def _plan(repo: GitRepo, now: datetime) -> tuple[str, Plan]:
    """The repo's gates folder, and its plan at `now`."""
    if not repo.root.is_dir():
        raise ConfigError(f"{repo.root} is not a folder; pass the gitgate repo with --repo")
    checkout = plan_checkout(repo.root, repo.tools, now,
                             charts=ChartFetcher(ChartStore(default_chart_cache())))
    return checkout.rendered.discovery.config.gates_path, checkout.plan


def _bundles(plan: Plan) -> list[Bundle]:
    return [b.bundle for b in plan.bundles]


def selected_bundles(selector: str, bundles: list[Bundle]) -> list[Bundle]:
    spec = parse_selector(selector)
    probe = Gate("probe", "-", "-", bundles=tuple(spec.get("bundles", ())),
                 match_labels=spec.get("selector", {}).get("matchLabels", {}))
    return [b for b in bundles if gate_covers(probe, b)]


def _branch(repo: GitRepo) -> tuple[Repo, str]:
    """The Git repo and its branch, checked before anything is written. With `--push`, the
    branch may hold no commit origin lacks: the push would send it along with the gate (a
    "WIP, do not push" commit going out with a freeze)."""
    git = open_repo(repo.root)
    branch = ensure_branch(git)
    if repo.push:
        ahead = unpushed(git, branch)
        if ahead:
            shown = "; ".join(ahead[:5]) + (f"; and {len(ahead) - 5} more" if len(ahead) > 5
                                            else "")
            raise ConfigError(
                f"{branch} has {len(ahead)} commit(s) origin does not have ({shown}); --push "
                "would send them with the gate, so nothing was written. Push or drop them "
                "first, or pause from a clean clone of origin")
    return git, branch


def _commit(repo: GitRepo, checked: tuple[Repo, str], paths: list[Path], message: str,
            summary: str) -> Committed:
    git, branch = checked
    sha = commit_only(git, paths, message)
    with git.git.custom_environment(**dict(repo.env)):
        rebased = push(git, branch) if repo.push else 0
    head = git.head.commit.hexsha if rebased else sha
    return Committed(summary, head, branch, repo.push, rebased, _remote_of(git), repo.root,
                     signed=is_signed(git, head))


def _remote_of(git: Repo) -> str:
    """The remote the branch tracks, else `origin`, else the only remote; "" without one."""
    try:
        tracking = git.active_branch.tracking_branch()
    except (TypeError, ValueError):
        tracking = None
    if tracking is not None:
        return str(tracking.remote_name)
    names = [r.name for r in git.remotes]
    return "origin" if "origin" in names else names[0] if len(names) == 1 else ""


def pause(repo: GitRepo, selector: str, reason: str, now: datetime, *, action: str = "hold",
          until: datetime | None = None, clusters: tuple[str, ...] = (),
          known_clusters: frozenset[str] | None = None) -> Committed:
    """`known_clusters`: Karmada's member clusters, when they could be asked for."""
    if not reason.strip():
        raise ConfigError("--reason must say why (it is shown wherever the bundle is held); a "
                          "gate without a reason is invalid, and an invalid gate holds every "
                          "bundle")
    if until is not None and until <= now:
        raise ConfigError(f"until {until.isoformat()} is in the past: the gate would never hold")
    if clusters and action != "suspend":
        raise ConfigError("--clusters needs --action suspend (hold stops every write)")
    unknown = [c for c in clusters if known_clusters is not None and c not in known_clusters]
    if unknown:
        raise ConfigError(f"no member cluster named {', '.join(unknown)} in Karmada (its "
                          f"clusters: {', '.join(sorted(known_clusters or ())) or 'none'}); "
                          "nothing was committed")
    checked = _branch(repo)
    gates_path, plan = _plan(repo, now)
    matched = selected_bundles(selector, _bundles(plan))
    if not matched:
        known = ", ".join(b.name for b in _bundles(plan)) or "none"
        raise ConfigError(f"selector {selector!r} matches no bundle (bundles: {known})")
    # the pause's own gate, proven by what it selects and covers now (not by its annotation);
    # a broader freeze does not count: this pause must outlive its lifting
    same = next((s.gate for s in plan.gates if s.active and written_for(s.gate, selector)
                 and str(s.gate.action) == action and s.gate.clusters == clusters
                 and {b.name for b in matched} <= set(s.covers)), None)
    by = identity(checked[0])
    if same is not None:
        return _already_paused(repo, checked, same, until, reason.strip(), by, now)
    taken = {s.gate.name for s in plan.gates} | {p.stem for p in (repo.root / gates_path).glob("*")}
    name = gate_name_for(selector, taken)
    gate = new_gate(name, selector, reason, action=action, until=until, clusters=clusters,
                    by=by, at=now)
    path = repo.root / gates_path / f"{name}.yaml"
    _refuse_links(repo.root, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_gate(gate), encoding="utf-8")
    covered = ", ".join(b.name for b in matched)
    return _commit(repo, checked, [path], f"pause {selector}: {reason}",
                   f"wrote {path.relative_to(repo.root)}: {action} {covered}")


def _already_paused(repo: GitRepo, checked: tuple[Repo, str], gate: Gate,
                    until: datetime | None, reason: str, by: str, now: datetime) -> Committed:
    """A second pause of the same selector joins the existing gate: its reason is kept beside
    the others (with who and when), and the gate lasts as long as the longest pause asks."""
    lasts = f"until {rfc3339(gate.until)}" if gate.until else "until resumed"
    longer = gate.until is not None and (until is None or until > gate.until)
    new_reason = reason not in gate.reasons
    if not longer and not new_reason:
        return Committed(f"already paused by {gate.file} {lasts} (reason: {gate.reason}); "
                         "nothing changed")
    path = repo.root / gate.file
    _refuse_uncommitted(checked[0], path)
    text = path.read_text(encoding="utf-8")
    if new_reason:
        text = with_reason(text, gate.name, reason, by, now)
    if longer:
        text = with_until(text, gate.name, until)
    path.write_text(text, encoding="utf-8")
    said = []
    if new_reason:
        said.append(f"added the reason {reason!r} beside {'; '.join(map(repr, gate.reasons))}")
    lasts_now = (f"until {rfc3339(until)}" if until else "until resumed") if longer else lasts
    said.append(f"extended {lasts_now}" if longer else f"it lasts {lasts_now}")
    return _commit(repo, checked, [path], f"pause {gate.paused_for}: {reason} (joins "
                   f"{gate.name})", f"already paused by {gate.file}; {', '.join(said)}")


def _refuse_uncommitted(git: Repo, path: Path) -> None:
    if path.exists() and has_uncommitted_changes(git, path):
        raise ConfigError(f"{path.name} has uncommitted changes; commit or discard them first "
                          "(gitgate commits the gate file as a whole)")


def _refuse_links(root: Path, path: Path) -> None:
    """Never write through a symlink: every folder from the repo root to the gate file must be
    a real folder inside the repo (or not exist yet)."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            raise ConfigError(f"{current.relative_to(root)} is a symlink: gitgate does not write "
                              "gates through links (it would not read them there either); "
                              "replace it with a real folder")


def pause_until(now: datetime, until: datetime | None, duration: timedelta | None
                ) -> datetime | None:
    return until if until is not None else now + duration if duration is not None else None


Retry = Callable[[list[str], bool], list[str]]  # (bundle names, dry run) -> what it retried


def resume(repo: GitRepo, selector: str, now: datetime, *, dry_run: bool = False,
           retry: Retry | None = None) -> Committed:
    """Commit the removal of the gate named SELECTOR, or of the gates `pause SELECTOR` wrote
    (`gitops.resume`); every other gate still holding a selected bundle is named, untouched.
    Then `retry` (given --kubeconfig) asks their halted rollouts to try their wave again."""
    checked = _branch(repo)
    _, plan = _plan(repo, now)
    selected = selected_bundles(selector, _bundles(plan))
    edits, refusals = resume_edits(selector, plan.gates, selected)
    if not selected and not edits:  # a typo: it names no bundle and no gate
        names = [b.name for b in _bundles(plan)] + [s.gate.name for s in plan.gates]
        raise ConfigError(f"{selector!r} names no gate and selects no bundle"
                          f"{closest_hint(selector, names, 'bundles and gates')}")
    if refusals and not edits:
        raise StillHeld(f"nothing was changed: no gate is named {selector!r} or was written "
                        f"by `gitgate pause {selector}`; what holds it is left as it is:\n"
                        + "\n".join(r.describe() for r in refusals))
    if not edits and retry is None:
        return Committed(f"{selector} is not paused: no active gate holds it, so there is "
                         "nothing to resume (a rollout halted without a gate is retried with "
                         "--kubeconfig)")
    committed = _lift(repo, checked, selector, edits, dry_run) if edits else None
    retried = retry([b.name for b in selected], dry_run) if retry else []
    if committed is None and not retried:
        return Committed(f"{selector} is not paused: no active gate holds it and no rollout of "
                         "it is halted, so there is nothing to resume")
    lines = "\n".join([("would " if dry_run else "") + line for line in retried]
                      + [f"still held: {r.describe()}" for r in refusals])
    if committed is None:
        return Committed(lines + ("\n(dry run: nothing written)" if dry_run else ""))
    if not lines:
        return committed
    return replace(committed, summary=committed.summary + "\n" + lines)


def _lift(repo: GitRepo, checked: tuple[Repo, str], selector: str, edits: list[GateEdit],
          dry_run: bool) -> Committed:
    summary = "\n".join(e.describe() for e in edits)
    if dry_run:
        return Committed("would " + summary.replace("\n", "\nwould ") + "\n(dry run: nothing "
                         "written)")
    paths = []
    for file in sorted({e.file for e in edits}):
        path = repo.root / file
        _refuse_uncommitted(checked[0], path)
        text: str | None = path.read_text(encoding="utf-8")
        for edit in (e for e in edits if e.file == file):
            text = edited_gate_file(text, edit.gate, edit.remove_bundles) if text else None
        if text is None:
            path.unlink()
        else:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    files = ", ".join(sorted({e.file for e in edits}))
    return _commit(repo, checked, paths, f"resume {selector}: {files}", summary)


def approve(repo: GitRepo, bundle: str, now: datetime) -> Committed:
    """Let the committed content of `bundle` (HEAD's, not the work tree's) through the gates
    that hold it."""
    checked = _branch(repo)
    with tempfile.TemporaryDirectory(prefix="gitgate-approve-") as scratch:
        committed = head_snapshot(checked[0], repo.root, Path(scratch))
        _, plan = _plan(replace(repo, root=committed), now)
    item = next((b for b in plan.bundles if b.bundle.name == bundle), None)
    if item is None:
        raise ConfigError(f"no bundle named {bundle!r} at HEAD (approve lets committed content "
                          "through: commit the bundle first)")
    if item.bundle.failed:
        raise ConfigError(f"bundle {bundle} does not render at HEAD; fix it before approving")
    digest = item.verdict.digest
    files = sorted({s.gate.file for s in plan.gates if s.active and bundle in s.covers})
    if not files:
        raise ConfigError(f"no active gate covers {bundle}; nothing to approve")
    paths = [repo.root / file for file in files]
    for path in paths:
        _refuse_uncommitted(checked[0], path)
    texts = {path: path.read_text(encoding="utf-8") for path in paths}
    approved = {path: with_approval(text, bundle, digest) for path, text in texts.items()}
    if approved == texts:  # approve run again: this content is let through already
        return Committed(f"{bundle} is already approved at digest {digest[:12]} through "
                         f"{', '.join(files)}: nothing to commit")
    for path, text in approved.items():
        path.write_text(text, encoding="utf-8")
    message = f"approve {bundle} {digest[:12]} through {', '.join(files)}"
    return _commit(repo, checked, paths, message, f"approved {bundle} at digest {digest}")


def rollback_target(history: list[dict[str, str]], live: str, healthy: str = "") -> str:
    """The revision to go back to (pure): the last one a loop saw ready on every cluster
    (`healthy`) when that is not the live one; else the newest the history records as
    applied that is not the live one."""
    if healthy and healthy != live:
        return healthy
    for entry in reversed(history):
        if str(entry.get("outcome", "")).startswith("applied") and entry.get("revision") and \
                entry["revision"] != live:
            return str(entry["revision"])
    raise ConfigError("the bundle's history records no earlier applied revision to go back "
                      "to; name one with --to")


def rollback(repo: GitRepo, bundle: str, revision: str, now: datetime, *,
             hold: bool = False, why: str = "") -> Committed:
    """One commit restoring the bundle's source folder (its bundle.yaml included) as
    `revision` had it: files added since are removed. With `hold`, the commit also adds a
    gate holding the bundle that lets exactly the restored content through (approved by its
    digest), so nothing newer goes out until the gate is lifted. Refused when the folder
    holds other bundles too (a split source): naming them. `why`: what made it roll back,
    said in the gate's reason and the commit message."""
    checked = _branch(repo)
    git = checked[0]
    gates_path, plan = _plan(repo, now)
    found = {b.name: b for b in _bundles(plan)}
    if bundle not in found:
        raise ConfigError(f"no bundle named {bundle!r}{closest_hint(bundle, found)}")
    folder = found[bundle].source.path
    sharing = sorted(n for n, b in found.items() if b.source.path == folder and n != bundle)
    if sharing or folder in (".", ""):
        raise ConfigError(f"{folder} also holds {', '.join(sharing) or 'every other bundle'}: "
                          "a rollback restores whole folders, so it would roll them back too; "
                          "nothing was written")
    path = repo.root / folder
    _refuse_uncommitted(git, path)
    try:
        resolved = str(git.git.rev_parse("--verify", f"{revision}^{{commit}}")).strip()
    except GitCommandError:
        raise ConfigError(f"--to {revision}: no such commit in {repo.root}") from None
    top = Path(str(git.working_tree_dir)).resolve()
    rel = path.resolve().relative_to(top).as_posix()
    if not str(git.git.ls_tree("-d", "--name-only", resolved, "--", rel)).strip():
        raise ConfigError(f"{folder} did not exist at {resolved[:12]}: nothing to restore")
    git.git.rm("-r", "-q", "--ignore-unmatch", "--", rel)
    git.git.checkout(resolved, "--", rel)
    paths = [path]
    summary = f"restored {folder} as of {resolved[:12]}"
    if hold:
        _, restored = _plan(repo, now)
        item = next((b for b in restored.bundles if b.bundle.name == bundle), None)
        if item is None or item.bundle.failed:
            raise ConfigError(f"{bundle} does not render as of {resolved[:12]}; the rollback "
                              "was not committed (git checkout HEAD -- " f"{rel} undoes it)")
        taken = {s.gate.name for s in restored.gates} | {
            p.stem for p in (repo.root / gates_path).glob("*")}
        name = gate_name_for(f"rollback-{bundle}", taken)
        gate_file = repo.root / gates_path / f"{name}.yaml"
        _refuse_links(repo.root, gate_file)
        gate_file.parent.mkdir(parents=True, exist_ok=True)
        reason = (f"rolled back to {resolved[:12]}{f' ({why})' if why else ''}: nothing "
                  "newer goes out until this is lifted")
        gate_file.write_text(with_approval(dump_gate(new_gate(
            name, bundle, reason, by=identity(git), at=now)), bundle, item.verdict.digest),
            encoding="utf-8")
        paths.append(gate_file)
        summary += f"; {gate_file.relative_to(repo.root)} holds anything newer"
    message = f"rollback {bundle} to {resolved[:12]}" + (f"\n\n{why}" if why else "")
    return _commit(repo, checked, paths, message, summary)
