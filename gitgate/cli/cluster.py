"""Commands against the Karmada API server: `apply` (one pass, for CI) and `status`."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from gitgate.cli.flags import (
    adopt_flag,
    bundle_flag,
    completes,
    kube_flags,
    output_flag,
    path_arg,
    tool_flags,
    write_flags,
)
from gitgate.cli.kube import cluster_from
from gitgate.cli.lock import chart_fetcher
from gitgate.cli.offline import repo_folder, warn_if_empty
from gitgate.errors import GitgateError
from gitgate.loop import LoopSettings, Reconciler
from gitgate.output import console
from gitgate.output.printers import Printable, show
from gitgate.output.statusviews import (
    pass_document,
    pass_table,
    provenance_lines,
    status_document,
    status_table,
)
from gitgate.passes.onepass import ApplyOptions, ClusterPort, PassResult, reconcile, selected
from gitgate.passes.recorded import recorded_instances, recorded_status
from gitgate.plan import Plan
from gitgate.render.tools import Tools, find_tools
from gitgate.source.git import LocalCheckout
from gitgate.status.bundlestate import bundle_states
from gitgate.status.wait import Settling, WaitResult
from gitgate.timespec import duration_flag


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    adopt_flag(apply, "its bundles this repo lacks are pruned, as if they left Git")
    apply.add_argument("--wait", action="store_true",
                       help="after writing, wait until every open bundle is scheduled, "
                            "applied, current and Healthy on each cluster it is placed on and "
                            "not suspended (suspended clusters are reported, not waited for)")
    apply.add_argument("--timeout", default=None,
                       help="how long --wait waits before it exits 1 naming what is not ready "
                            "(default 5m; only with --wait)")
    output_flag(apply, "table", "json")
    tool_flags(apply)
    kube_flags(apply, required=True)
    apply.set_defaults(func=cmd_apply)

    status = sub.add_parser("status", help="what gitgate last did with each bundle",
                            epilog="examples:\n  gitgate status --kubeconfig karmada.config\n"
                                   "  gitgate status -o json | jq '.bundles[].verdict'\n"
                                   "  gitgate status -o wide   # one row per bundle and "
                                   "member cluster\n"
                                   "  gitgate status 'shop/*' -w")
    completes(status.add_argument("bundle", nargs="?", help="only bundles whose name matches "
                                                            "this glob (quote it: 'shop/*')"))
    output_flag(status, "table", "wide", "json")
    status.add_argument("--watch", "-w", action="store_true",
                        help="keep watching: print the status again whenever it changes "
                             "(Ctrl-C ends)")
    kube_flags(status, required=True)
    status.set_defaults(func=cmd_status)


def cmd_apply(args: argparse.Namespace) -> int:
    options = ApplyOptions(
        now=args.now(), dry_run=args.dry_run, force_conflicts=args.force_conflicts,
        allow_mass_prune=args.allow_mass_prune, resync=duration_flag(args.resync, "--resync"),
        instance=args.instance, adopt=args.adopt, concurrency=args.apply_concurrency,
        suspension_timeout=duration_flag(args.suspension_timeout, "--suspension-timeout"),
        hook_timeout=duration_flag(args.hook_timeout, "--hook-timeout"))
    if args.timeout is not None and not args.wait:
        raise GitgateError("--timeout is how long --wait waits: add --wait, or drop --timeout")
    args.timeout = args.timeout or WAIT_TIMEOUT
    timeout = duration_flag(args.timeout, "--timeout").total_seconds()
    if args.wait and args.dry_run:
        raise GitgateError("--wait needs a real apply: drop --dry-run or --wait")
    root = repo_folder(args)
    cluster = cluster_from(args)
    tools = find_tools(args.helm, args.kustomize)
    if args.wait:
        plan, result, waited = _until_settled(root, tools, cluster, options, args, timeout)
    else:
        done = reconcile(root, tools, cluster, options, bundle_glob=args.bundle,
                         charts=chart_fetcher(cluster))
        assert done.result is not None  # a pass that ran has a result
        plan, result, waited = done.plan, done.result, None
    warn_if_empty(root, plan)
    document = pass_document(result)
    console.problems(plan.problems, plan.warnings)
    ok = result.ok and not plan.problems
    if waited is not None and result.ok:
        for line in waited.unfinished:
            console.progress(line)
        if waited.error:
            console.warn(waited.error)
        document["wait"] = waited.document()
        ok = ok and waited.ready
    show(args.output, Printable(lambda: document, lambda _wide: pass_table(result)))
    return 0 if ok else 1


WAIT_POLL = timedelta(seconds=2)  # `apply --wait` reads Karmada's status this often
WAIT_TIMEOUT = "5m"  # `apply --wait --timeout` by default


def _until_settled(root: Path, tools: Tools, cluster: ClusterPort, options: ApplyOptions,
                   args: argparse.Namespace, timeout: float
                   ) -> tuple[Plan, PassResult, WaitResult]:
    """`apply --wait`: the reconcile loop itself, over the folder as it is, run until
    Karmada reports every open bundle ready, a rollout halts, a pass fails or the timeout;
    its progress on stderr. A pass that cannot run raises, as `apply` does."""
    settings = LoopSettings(interval=WAIT_POLL, resync=options.resync,
                            status_interval=WAIT_POLL, bundles=args.bundle, apply=options)
    loop = Reconciler(LocalCheckout(root), cluster, tools, settings, clock=args.now)
    settling = Settling(timeout, time.monotonic(), timeout_text=args.timeout)
    settled: list[WaitResult] = []

    def until() -> bool:
        state = loop.state
        if state.failure is not None:
            return True
        lines, outcome = settling.turn(state.last_plan, state.last_result, state.observation,
                                       time.monotonic())
        for line in lines:
            console.progress(line)
        if outcome is not None:
            settled.append(outcome)
        return outcome is not None

    with _quiet_loop():
        loop.run(until=until)
    if loop.state.failure is not None:
        raise loop.state.failure
    plan, result = loop.state.last_plan, loop.state.last_result
    assert plan is not None and result is not None and settled
    return plan, result, settled[0]


@contextlib.contextmanager
def _quiet_loop() -> Iterator[None]:
    """The loop logs for `gitgate run`; under `apply --wait` the CLI reports instead."""
    logger = logging.getLogger("gitgate")
    quiet = logging.NullHandler()
    logger.addHandler(quiet)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(quiet)
        logger.propagate = propagate


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
    recorded = recorded_status(cluster, args.instance)
    inventories, observation = recorded.inventories, recorded.observation
    if args.bundle is not None and inventories:
        chosen = set(selected([i.bundle for i in inventories], args.bundle, "status"))
        inventories = [i for i in inventories if i.bundle in chosen]
    states = bundle_states(inventories, dict(observation.bundles), recorded.shards)
    document = status_document(states, observation.error, recorded.provenance)
    if document == shown:
        return document
    if observation.error and shown is None:
        console.warn(observation.error)
    show(args.output, Printable(
        lambda: document,
        lambda wide: status_table(states, args.now(), wide=wide),
        aside=lambda: provenance_lines(recorded.provenance or {})))
    if not inventories and shown is None:
        console.warn(_no_bundles_hint(cluster, args.instance))
    return document


def _no_bundles_hint(cluster: ClusterPort, instance: str) -> str:
    """Why the table is empty: nothing applied yet, or another --instance recorded it."""
    others = [name for name in recorded_instances(cluster) if name != instance]
    if others:
        return (f"no bundle is recorded for --instance {instance}; instances with bundles "
                f"here: {', '.join(others)} (pass --instance NAME)")
    return (f"no bundle is recorded for --instance {instance} on this API server: nothing "
            "was applied here yet (`gitgate apply` or a running `gitgate run` records them)")


WATCH_EVERY = 2.0  # seconds between reads of `status --watch`
