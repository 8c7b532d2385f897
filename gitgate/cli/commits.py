"""Commit-to-pause commands: `pause`, `resume`, `approve`."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from gitgate.cli.flags import completes, connection_flags, git_flags, kube_flags
from gitgate.cli.kube import cluster_asked, cluster_from
from gitgate.errors import ConfigError, KubeError
from gitgate.gitops import workflow
from gitgate.output import console
from gitgate.passes.recorded import member_names, recorded_status, retry_halted
from gitgate.render.tools import find_tools
from gitgate.timespec import parse_duration, parse_time


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pause = sub.add_parser(
        "pause", help="commit a gate that holds the selected bundles",
        epilog="examples:\n  gitgate pause payments --reason INC-42 --push\n"
               "  gitgate pause 'shop/*' --reason \"finishing edits\" --for 2h\n"
               "  gitgate pause team=payments --reason migration --action suspend "
               "--clusters member2")
    completes(pause.add_argument("selector",
                                 help="bundle name glob (shop/*) or labels (team=payments)"))
    pause.add_argument("--reason", required=True,
                       help="why (shown wherever the bundle is held); must not be empty")
    until = pause.add_mutually_exclusive_group()
    until.add_argument("--until", help="lift the gate at this RFC 3339 time")
    until.add_argument("--for", dest="duration", help="lift the gate after this long (2h, 1d)")
    pause.add_argument("--action", choices=["hold", "suspend"], default="hold",
                       help="hold: write nothing; suspend: write templates, Karmada dispatches "
                            "nothing")
    pause.add_argument("--clusters", help="suspend only these member clusters (a,b); checked "
                                          "against Karmada's Clusters with --kubeconfig")
    git_flags(pause)
    connection_flags(pause, "$KUBECONFIG when set, else no check of --clusters")
    pause.set_defaults(func=cmd_pause)

    resume = sub.add_parser(
        "resume", help="commit the removal of the gates covering a bundle",
        epilog="examples:\n  gitgate resume payments --dry-run\n  gitgate resume payments --push\n"
               "  gitgate resume pause-payments   (one gate, by its name)")
    completes(resume.add_argument("selector", help="a gate name, or a bundle name glob or labels"),
              gates=True)
    resume.add_argument("--dry-run", action="store_true",
                        help="say which gates would be removed or narrowed; change nothing")
    git_flags(resume)
    kube_flags(resume, required=False)
    resume.set_defaults(func=cmd_resume)

    approve = sub.add_parser("approve", help="let the current content of a held bundle through")
    completes(approve.add_argument("bundle", help="the held bundle to let through"))
    git_flags(approve)
    approve.set_defaults(func=cmd_approve)

    rollback = sub.add_parser(
        "rollback", help="commit the bundle's folder as an earlier revision had it",
        epilog="examples:\n  gitgate rollback shop/web --kubeconfig karmada.config --push\n"
               "  gitgate rollback shop/web --to 1a2b3c4 --hold --push")
    completes(rollback.add_argument("bundle", help="the bundle to roll back"))
    rollback.add_argument("--to", metavar="REVISION",
                          help="the revision to restore (default: with --kubeconfig, the last "
                               "one the bundle's history records as applied before the live "
                               "one)")
    rollback.add_argument("--hold", action="store_true",
                          help="in the same commit, a gate that lets exactly the restored "
                               "content through and holds anything newer until lifted")
    git_flags(rollback)
    kube_flags(rollback, required=False)
    rollback.set_defaults(func=cmd_rollback)


def _repo(args: argparse.Namespace) -> workflow.GitRepo:
    return workflow.GitRepo(Path(args.repo).resolve(), find_tools(args.helm, args.kustomize),
                            args.push)


def _said(done: workflow.Committed) -> int:
    if done.sha is None:
        console.out(done.summary)
        return 0
    pushed = ""
    if done.pushed:
        pushed = " and pushed" + (f" (rebased onto the remote {done.rebased}x first)"
                                  if done.rebased else "")
    signed = "signed" if done.signed else "not signed (git's commit.gpgsign is off)"
    console.out(f"{done.summary}\ncommitted {done.sha[:12]} on {done.branch}{pushed}, {signed}")
    if not done.pushed:
        console.warn(not_pushed(done))
    return 0


def not_pushed(done: workflow.Committed) -> str:
    """What a commit that was not pushed does, and does not do yet."""
    where = f" -C {done.root}" if done.root is not None else ""
    if done.remote:
        return (f"not pushed: a `gitgate run` following {done.remote} does not see this yet, "
                f"so it is not in effect there; push it now: git{where} push {done.remote} "
                f"{done.branch} (or use --push)")
    return ("not pushed: the repo has no remote; this commit is in effect for passes that read "
            "this folder (`gitgate apply`), and for a `gitgate run` once it reaches the repo "
            "that run follows")


def cmd_pause(args: argparse.Namespace) -> int:
    now = args.now()
    until = workflow.pause_until(
        now, parse_time(args.until, "--until") if args.until else None,
        parse_duration(args.duration) if args.duration else None)
    clusters = tuple(c.strip() for c in (args.clusters or "").split(",") if c.strip())
    known = _member_clusters(args) if clusters and cluster_asked(args) else None
    return _said(workflow.pause(_repo(args), args.selector, args.reason, now,
                                action=args.action, until=until, clusters=clusters,
                                known_clusters=known))


def _member_clusters(args: argparse.Namespace) -> frozenset[str]:
    """The names of Karmada's member clusters (cluster.karmada.io Cluster objects)."""
    try:
        return member_names(cluster_from(args))
    except KubeError as exc:
        if exc.status == 404:
            raise ConfigError(f"{exc.message}: this API server is not Karmada's, so "
                              "--clusters cannot be checked; pass the Karmada API server's "
                              "kubeconfig with --kubeconfig") from None
        raise


def cmd_resume(args: argparse.Namespace) -> int:
    now = args.now()
    retry = _retry_halts(args, now) if cluster_asked(args) else None
    return _said(workflow.resume(_repo(args), args.selector, now, dry_run=args.dry_run,
                                 retry=retry))


def _retry_halts(args: argparse.Namespace, now: datetime) -> workflow.Retry:
    """Ask the halted rollouts of the selected bundles to try their wave again: one field in
    each inventory, under its own field manager (a running loop's writes leave it alone);
    the next pass restarts the wave's timers."""
    cluster = cluster_from(args)

    def retry(names: list[str], dry_run: bool) -> list[str]:
        return retry_halted(cluster, args.instance, names, now, dry_run)
    return retry


def cmd_approve(args: argparse.Namespace) -> int:
    return _said(workflow.approve(_repo(args), args.bundle, args.now()))


def cmd_rollback(args: argparse.Namespace) -> int:
    revision = args.to
    if revision is None:
        if not cluster_asked(args):
            raise ConfigError("name the revision with --to, or pass --kubeconfig to take the "
                              "last applied one from the bundle's history")
        found = next((inv for inv in recorded_status(cluster_from(args), args.instance)
                      .inventories if inv.bundle == args.bundle), None)
        if found is None:
            raise ConfigError(f"no bundle {args.bundle!r} is recorded for --instance "
                              f"{args.instance}: name the revision with --to")
        revision = workflow.rollback_target(list(found.history), found.applied_revision,
                                            found.healthy_revision)
    return _said(workflow.rollback(_repo(args), args.bundle, revision, args.now(),
                                   hold=args.hold))
