"""`gitgate run`: wire the Git source, the API server, the loop, the HTTP endpoints and the
leader election together, and stop cleanly on SIGTERM."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import uuid
from datetime import UTC, datetime
from pathlib import Path

from gitgate.apply.engine import ApplyOptions
from gitgate.apply.inventory import NAMESPACE, system_namespace
from gitgate.cli.flags import suspension_timeout_flag
from gitgate.errors import GitgateError
from gitgate.httpserver import EndpointServer, LoopEndpoints
from gitgate.loop import LoopSettings, Reconciler, cache_dir_default
from gitgate.output.logs import setup_logging
from gitgate.output.status import loop_document
from gitgate.render.tools import find_tools
from gitgate.source.git import GitAuth, GitSource
from gitgate.timespec import duration_flag

log = logging.getLogger("gitgate")


def _ensure_system_namespace(cluster, stop) -> bool:
    """gitgate-system holds the Lease; wait for the API server rather than crash-looping.
    False when stopped before it could be made."""
    delay = 1.0
    while not stop.is_set():
        try:
            if cluster.get("v1", "Namespace", "", NAMESPACE) is None:
                cluster.apply(system_namespace())
            return True
        except GitgateError as exc:
            log.warning("cannot prepare %s yet: %s (retrying in %.0fs)", NAMESPACE, exc.message,
                        delay)
            stop.wait(delay)
            delay = min(delay * 2, 30.0)
    return False


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="reconcile a Git branch forever (the in-cluster mode)")
    run.add_argument("--repo", required=True, help="Git URL to follow")
    run.add_argument("--branch", default="main")
    run.add_argument("--path", default=".", help="the gitgate repo folder inside the Git repo")
    run.add_argument("--interval", default="1m")
    run.add_argument("--resync", default="10m")
    run.add_argument("--cache-dir", default=str(cache_dir_default()))
    run.add_argument("--listen", default=":8080")
    run.add_argument("--kubeconfig")
    run.add_argument("--context")
    run.add_argument("--instance", default="default")
    run.add_argument("--git-token-file")
    run.add_argument("--git-token-env")
    run.add_argument("--git-username", default="x-access-token")
    run.add_argument("--git-ssh-key")
    run.add_argument("--git-known-hosts")
    run.add_argument("--webhook-secret-file")
    run.add_argument("--no-leader-elect", action="store_true",
                     help="write without holding the Lease (a single replica)")
    run.add_argument("--lease-duration", type=int, default=15)
    run.add_argument("--force-conflicts", action="store_true")
    run.add_argument("--allow-mass-prune", action="store_true")
    suspension_timeout_flag(run)
    run.add_argument("--log-format", choices=["text", "json"], default="text")
    run.add_argument("--helm")
    run.add_argument("--kustomize")
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from gitgate.apply.kube import KubeCluster, LeaseElector, load_client  # slow import

    setup_logging(args.log_format)
    auth = GitAuth.from_settings(args.git_token_file, args.git_token_env, args.git_ssh_key,
                                 args.git_known_hosts, args.git_username)
    source = GitSource(args.repo, args.branch, Path(args.cache_dir), auth)
    api = load_client(args.kubeconfig, args.context)
    cluster = KubeCluster(api)
    settings = LoopSettings(
        path=args.path, interval=duration_flag(args.interval, "--interval"),
        resync=duration_flag(args.resync, "--resync"),
        apply=ApplyOptions(now=datetime.now(UTC), instance=args.instance,
                           force_conflicts=args.force_conflicts,
                           allow_mass_prune=args.allow_mass_prune,
                           suspension_timeout=duration_flag(args.suspension_timeout,
                                                        "--suspension-timeout")))
    reconciler = Reconciler(source, cluster, find_tools(args.helm, args.kustomize), settings)
    secret = (Path(args.webhook_secret_file).read_bytes().strip()
              if args.webhook_secret_file else None)
    server = EndpointServer(args.listen, LoopEndpoints(
        ready=lambda: reconciler.state.ready, status=lambda: loop_document(reconciler),
        metrics=reconciler.metrics.exposition, trigger=reconciler.trigger,
        webhook_secret=secret)).start()
    def stop(*_: object) -> None:
        reconciler.stop.set()
        reconciler.wake.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    elector = None
    if not args.no_leader_elect:
        if not _ensure_system_namespace(cluster, reconciler.stop):
            server.stop()
            return 0
        identity = f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"
        lease = args.lease_duration
        elector = LeaseElector(api, NAMESPACE, f"gitgate-{args.instance}", identity,
                               lease_duration=lease, renew_deadline=max(2, lease * 2 // 3),
                               retry_period=max(1, lease // 7)).start()

    try:
        reconciler.run(elector.is_leader if elector else (lambda: True))
    finally:
        if elector is not None:
            elector.stop()
        server.stop()
    return 0
