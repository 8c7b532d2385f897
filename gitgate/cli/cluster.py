"""Commands against the Karmada API server: `apply` (one pass, for CI) and `status`."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gitgate.apply.engine import ApplyOptions, ClusterPort, read_inventories
from gitgate.apply.observe import observe
from gitgate.cli.flags import (
    bundle_flag,
    kube_flags,
    output_flag,
    path_arg,
    tool_flags,
    write_flags,
)
from gitgate.cli.kube import cluster_from
from gitgate.cli.repo import repo_folder, warn_if_empty
from gitgate.errors import GitgateError
from gitgate.output import console
from gitgate.output.status import pass_document, pass_table, status_document, status_table
from gitgate.pipeline import reconcile
from gitgate.plan import BundlePlan, Plan
from gitgate.render.tools import find_tools
from gitgate.status.wait import wait_ready
from gitgate.timespec import duration_flag


def register(sub: argparse._SubParsersAction) -> None:
    apply = sub.add_parser(
        "apply", help="one pass against the Karmada API (for CI pipelines)",
        epilog="examples:\n  gitgate apply examples/repo --once --kubeconfig karmada.config\n"
               "  gitgate apply examples/repo --dry-run -o json\n"
               "exit codes: 0 all applied or held, 1 a bundle or source failed, 2 the pass "
               "could not run (flags, kubeconfig, API server unreachable or refusing)")
    path_arg(apply)
    apply.add_argument("--once", action="store_true", help="accepted for clarity: one pass")
    apply.add_argument("--dry-run", action="store_true", help="server-side dry run, no writes")
    bundle_flag(apply)
    apply.add_argument("--resync", default="10m", help="re-apply unchanged objects this often")
    write_flags(apply)
    apply.add_argument("--wait", action="store_true",
                       help="after writing, wait until every open bundle is scheduled, "
                            "applied, current and Healthy on each cluster it is placed on and "
                            "not suspended (suspended clusters are reported, not waited for)")
    apply.add_argument("--timeout", default="5m",
                       help="how long --wait waits before it exits 1 naming what is not ready")
    output_flag(apply, "table", "json")
    tool_flags(apply)
    kube_flags(apply, required=True)
    apply.set_defaults(func=cmd_apply)

    status = sub.add_parser("status", help="what gitgate last did with each bundle",
                            epilog="examples:\n  gitgate status --kubeconfig karmada.config\n"
                                   "  gitgate status -o json | jq '.bundles[].verdict'\n"
                                   "  gitgate status -o wide   # one row per bundle and "
                                   "member cluster")
    output_flag(status, "table", "wide", "json")
    status.add_argument("--watch", "-w", action="store_true",
                        help="keep watching: print the status again whenever it changes "
                             "(Ctrl-C ends)")
    kube_flags(status, required=True)
    status.set_defaults(func=cmd_status)


def cmd_apply(args: argparse.Namespace) -> int:
    options = ApplyOptions(
        now=datetime.now(UTC), dry_run=args.dry_run, force_conflicts=args.force_conflicts,
        allow_mass_prune=args.allow_mass_prune, resync=duration_flag(args.resync, "--resync"),
        instance=args.instance, concurrency=args.apply_concurrency,
        suspension_timeout=duration_flag(args.suspension_timeout, "--suspension-timeout"),
        hook_timeout=duration_flag(args.hook_timeout, "--hook-timeout"))
    timeout = duration_flag(args.timeout, "--timeout").total_seconds()
    if args.wait and args.dry_run:
        raise GitgateError("--wait needs a real apply: drop --dry-run or --wait")
    root = repo_folder(args)
    cluster = cluster_from(args)
    tools = find_tools(args.helm, args.kustomize)
    started = time.monotonic()
    plan, result = reconcile(root, tools, cluster, options, bundle_glob=args.bundle)
    if args.wait:  # keep passing while a rollout or a sync moves on (a hook completes...)
        shown: dict[str, str] = {}
        while result.ok and _report_moving(plan, shown):
            left = timeout - (time.monotonic() - started)
            wake = min(check for b in plan.bundles for check in _checks(b))
            pause = (wake - datetime.now(UTC)).total_seconds()
            if left <= 0:
                break
            time.sleep(min(max(pause, 0.5), left))
            options = replace(options, now=datetime.now(UTC))
            plan, result = reconcile(root, tools, cluster, options, bundle_glob=args.bundle)
    warn_if_empty(root, plan)
    document = pass_document(result)
    if args.output != "json":
        console.out(pass_table(result))
    console.problems(plan.problems, plan.warnings)
    ok = result.ok and not plan.problems
    if args.wait and result.ok:
        halted = [(b.bundle.name, b.rollout) for b in plan.bundles
                  if b.rollout is not None and b.rollout.halted]
        for name, rollout in halted:
            console.progress(f"{name}: rollout {rollout.waiting_for}")
        unfinished = [] if halted else _unfinished(plan, args.timeout)
        for line in unfinished:
            console.progress(line)
        left = max(0.0, timeout - (time.monotonic() - started))
        waited = _wait(cluster, args.instance, [b.bundle for b in result.bundles
                                                 if not b.failed
                                                 and b.verdict in WAITED_VERDICTS], left)
        document["wait"] = waited
        ok = ok and waited["ready"] and not halted and not unfinished
    if args.output == "json":
        console.out_json(document)
    return 0 if ok else 1


def _checks(item: BundlePlan) -> list[datetime]:
    """When the bundle's rollout or sync wants a pass again."""
    return [c for c in (item.rollout.next_check if item.rollout else None,
                        item.hooks.next_check if item.hooks else None) if c is not None]


def _unfinished(plan: Plan, timeout: str) -> list[str]:
    """A rollout or a sync still moving when `--wait` ran out of time: one line each."""
    return [f"{item.bundle.name}: {what} not finished within --timeout {timeout}: "
            f"{step.waiting_for}"
            for item in plan.bundles
            for what, step in (("rollout", item.rollout), ("hooks", item.hooks))
            if step is not None and step.next_check is not None]


def _report_moving(plan: Plan, shown: dict[str, str]) -> bool:
    """Print where each rollout and each sync with hooks is when that changed; True while
    one still moves on."""
    for item in plan.bundles:
        for what, step in (("rollout", item.rollout), ("hooks", item.hooks)):
            if step is None:
                continue
            key = f"{item.bundle.name} {what}"
            if shown.get(key) != step.waiting_for:
                console.progress(f"{item.bundle.name}: {what} {step.waiting_for}")
                shown[key] = step.waiting_for
    return any(_checks(item) for item in plan.bundles)


WAITED_VERDICTS = {"apply", "suspended"}  # held bundles were not written: nothing to wait for


def _wait(cluster: ClusterPort, instance: str, bundles: list[str],
          timeout: float) -> dict[str, Any]:
    """Wait for Karmada to report the bundles ready; progress on stderr; what is not ready
    at the timeout is named, one line per bundle and cluster."""
    wanted = set(bundles)
    inventories = [inv for inv in read_inventories(cluster, instance).values()
                   if inv.bundle in wanted]
    console.progress(f"waiting up to {timeout:g}s for {len(bundles)} bundles to be ready in "
                     "Karmada")
    waited = wait_ready(lambda: observe(cluster, inventories), sorted(wanted), timeout,
                        report=console.progress)
    if waited.error:
        console.warn(waited.error)
    elif waited.pending:
        console.progress(f"not ready after {waited.seconds:.0f}s:")
        for item in waited.pending:
            console.progress(f"  {item}")
    else:
        console.progress(f"all {len(bundles)} bundles ready after {waited.seconds:.0f}s")
    return {"ready": not waited.pending and not waited.error,
            "seconds": round(waited.seconds, 1), "error": waited.error,
            "pending": [{"bundle": p.bundle, "cluster": p.cluster, "message": p.message}
                        for p in waited.pending]}


def cmd_status(args: argparse.Namespace) -> int:
    cluster = cluster_from(args)
    if not args.watch:
        _show_status(args, cluster, None)
        return 0
    shown: dict[str, Any] | None = None
    with _interrupt_ends() as ended:
        while not ended.is_set():  # like `kubectl get -w`: print again on every change
            shown = _show_status(args, cluster, shown)
            ended.wait(WATCH_EVERY)
    return 0  # Ctrl-C ends a watch: that is its normal end


@contextlib.contextmanager
def _interrupt_ends() -> Iterator[threading.Event]:
    """Ctrl-C sets the event instead of raising in the middle of a request (where it could
    leave the HTTP client's locks held and the exit hanging); a second Ctrl-C raises."""
    ended = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield ended
        return

    def interrupted(signum: int, frame: object) -> None:
        if ended.is_set():
            raise KeyboardInterrupt
        ended.set()

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield ended
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, previous)


def _show_status(args: argparse.Namespace, cluster: ClusterPort,
                 shown: dict[str, Any] | None) -> dict[str, Any]:
    inventories = list(read_inventories(cluster, args.instance).values())
    observation = observe(cluster, inventories)
    document = status_document(inventories, observation)
    if document == shown:
        return document
    if args.output == "json":
        console.out_json(document)
    else:
        console.out(status_table(inventories, datetime.now(UTC), observation=observation,
                                 wide=args.output == "wide"))
    if observation.error and shown is None:
        console.warn(observation.error)
    return document


WATCH_EVERY = 2.0  # seconds between reads of `status --watch`
