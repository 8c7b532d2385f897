"""Commit-to-pause: `pause`, `resume` and `approve` each write one gate file and commit it."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from gitgate.bundle.group import Bundle
from gitgate.errors import ConfigError
from gitgate.gate.evaluate import gate_covers
from gitgate.gate.spec import Gate, GateSpecError, parse_duration, parse_time
from gitgate.gitops.gatefile import (
    dump_gate,
    gate_name_for,
    new_gate,
    parse_selector,
    with_approval,
)
from gitgate.gitops.repo import commit_only, ensure_branch, open_repo, push
from gitgate.pipeline import plan_checkout
from gitgate.plan import Plan
from gitgate.render.tools import find_tools


def _load(args: argparse.Namespace, now: datetime) -> tuple[Path, str, Plan]:
    """The repo folder, its gates folder, and its plan at `now`."""
    root = Path(args.repo).resolve()
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder; pass the gitgate repo with --repo")
    checkout = plan_checkout(root, find_tools(args.helm, args.kustomize), now)
    return root, checkout.rendered.discovery.config.gates_path, checkout.plan


def _bundles(plan: Plan) -> list[Bundle]:
    return [b.bundle for b in plan.bundles]


def _selected(selector: str, bundles: list[Bundle]) -> list[Bundle]:
    spec = parse_selector(selector)
    probe = Gate("probe", "-", "-", bundles=tuple(spec.get("bundles", ())),
                 match_labels=spec.get("selector", {}).get("matchLabels", {}))
    return [b for b in bundles if gate_covers(probe, b)]


def _finish(args: argparse.Namespace, repo, branch: str, sha: str, what: str) -> int:
    if args.push:
        push(repo, branch)
    print(f"{what}\ncommitted {sha[:12]} on {branch}" + (" and pushed" if args.push else ""))
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    try:
        until = (parse_time(args.until, "--until") if args.until
                 else now + parse_duration(args.duration) if args.duration else None)
    except GateSpecError as exc:
        raise ConfigError(str(exc)) from None
    if until is not None and until <= now:
        raise ConfigError(f"--until {args.until} is in the past: the gate would never hold")
    clusters = tuple(c.strip() for c in (args.clusters or "").split(",") if c.strip())
    if clusters and args.action != "suspend":
        raise ConfigError("--clusters needs --action suspend (hold stops every write)")
    root = Path(args.repo).resolve()
    repo = open_repo(root)
    branch = ensure_branch(repo)
    root, gates_path, plan = _load(args, now)
    matched = _selected(args.selector, _bundles(plan))
    if not matched:
        known = ", ".join(b.name for b in _bundles(plan)) or "none"
        raise ConfigError(f"selector {args.selector!r} matches no bundle (bundles: {known})")
    taken = {s.gate.name for s in plan.gates} | {p.stem for p in (root / gates_path).glob("*")}
    name = gate_name_for(args.selector, taken)
    gate = new_gate(name, args.selector, args.reason, action=args.action, until=until,
                    clusters=clusters)
    path = root / gates_path / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_gate(gate), encoding="utf-8")
    sha = commit_only(repo, [path], f"pause {args.selector}: {args.reason}")
    covered = ", ".join(b.name for b in matched)
    return _finish(args, repo, branch, sha, f"wrote {path.relative_to(root)}: {args.action} "
                   f"{covered}")


def cmd_resume(args: argparse.Namespace) -> int:
    root = Path(args.repo).resolve()
    repo = open_repo(root)
    branch = ensure_branch(repo)
    root, _, plan = _load(args, datetime.now(UTC))
    matched = {b.name for b in _selected(args.selector, _bundles(plan))}
    files = sorted({s.gate.file for s in plan.gates
                    if s.gate.name == args.selector or set(s.covers) & matched})
    if not files:
        raise ConfigError(f"no gate is named or covers {args.selector!r}; `gitgate gates "
                          f"{args.repo}` lists them")
    paths = [root / file for file in files]
    for path in paths:
        path.unlink()
    sha = commit_only(repo, paths, f"resume {args.selector}: remove {', '.join(files)}")
    return _finish(args, repo, branch, sha, f"removed {', '.join(files)}")


def cmd_approve(args: argparse.Namespace) -> int:
    root = Path(args.repo).resolve()
    repo = open_repo(root)
    branch = ensure_branch(repo)
    root, _, plan = _load(args, datetime.now(UTC))
    item = next((b for b in plan.bundles if b.bundle.name == args.bundle), None)
    if item is None:
        raise ConfigError(f"no bundle named {args.bundle!r}")
    if item.bundle.failed:
        raise ConfigError(f"bundle {args.bundle} does not render; fix it before approving")
    digest = item.verdict.digest
    files = sorted({s.gate.file for s in plan.gates if s.active and args.bundle in s.covers})
    if not files:
        raise ConfigError(f"no active gate covers {args.bundle}; nothing to approve")
    paths = [root / file for file in files]
    for path in paths:
        path.write_text(with_approval(path.read_text(encoding="utf-8"), args.bundle, digest),
                        encoding="utf-8")
    sha = commit_only(repo, paths, f"approve {args.bundle} {digest[:12]} through "
                                   f"{', '.join(files)}")
    return _finish(args, repo, branch, sha, f"approved {args.bundle} at digest {digest}")

