"""`gitgate run`: wire the Git source, the API server, the loop, the HTTP endpoints and the
leader election together, and stop cleanly on SIGTERM."""

from __future__ import annotations

import argparse
import gc
import logging
import posixpath
import signal
import socket
import threading
import uuid
from pathlib import Path

from gitgate import __version__
from gitgate.apiserver.apierrors import display_url
from gitgate.charts.credentials import cluster_secrets
from gitgate.charts.stage import ChartFetcher
from gitgate.charts.store import ChartStore
from gitgate.cli.flags import (
    HelpFormatter,
    gate_signer_flags,
    gate_trust_from,
    kube_flags,
    replica_identity,
    secret_file,
    tool_flags,
    trust_from,
    ui_flags,
    ui_settings,
    verify_flags,
    write_flags,
)
from gitgate.cli.kube import load_api, timeouts_from
from gitgate.endpoints.routes import LoopEndpoints
from gitgate.endpoints.server import EndpointServer, parse_listen
from gitgate.errors import GitgateError
from gitgate.heap import limit_arenas
from gitgate.loop.reconciler import Reconciler, cache_dir_default
from gitgate.loop.schedule import LoopSettings
from gitgate.output.logs import setup_logging
from gitgate.output.statusviews import loop_document
from gitgate.output.webui import ApiSource, StateSource, WebUi, loop_source
from gitgate.passes.leading import leader_lease
from gitgate.passes.onepass import (
    SYSTEM_NAMESPACE,
    ApplyOptions,
    ClusterPort,
    RecordCache,
    system_namespace,
)
from gitgate.passes.shards import Membership
from gitgate.prometheus.instant import InstantQueries
from gitgate.render.cache import RenderCache
from gitgate.render.diskcache import RenderDisk
from gitgate.render.sandbox import stop_all
from gitgate.render.tools import find_tools
from gitgate.source.gateguard import GateGuard
from gitgate.source.git import GitAuth, GitSource
from gitgate.source.provenance import RepoTrust
from gitgate.source.signatures import keyring_folder
from gitgate.status.notify import Notifier, apprise_sender, read_urls
from gitgate.timespec import duration_flag

log = logging.getLogger("gitgate")


def _ensure_system_namespace(cluster: ClusterPort, stop: threading.Event) -> bool:
    """gitgate-system holds the Lease; wait for the API server rather than crash-looping.
    False when stopped before it could be made."""
    delay = 1.0
    while not stop.is_set():
        try:
            if cluster.get("v1", "Namespace", "", SYSTEM_NAMESPACE) is None:
                cluster.apply(system_namespace())
            return True
        except GitgateError as exc:
            log.warning("cannot prepare %s yet: %s (retrying in %.0fs)", SYSTEM_NAMESPACE,
                        exc.message, delay)
            stop.wait(delay)
            delay = min(delay * 2, 30.0)
    return False


def page_source(reconciler: Reconciler, refresh_seconds: int) -> StateSource:
    """The page of `gitgate run`: the loop's published turn while it leads every bundle, else
    the records on the API server (read through the loop's records' cache)."""
    standby = ApiSource(reconciler.cluster, reconciler.settings.apply.instance,
                        reconciler.clock, "", refresh_seconds, records=reconciler.records)
    return loop_source(lambda: reconciler.published, standby, refresh_seconds)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser(
        "run", help="reconcile a Git branch forever (the in-cluster mode)",
        formatter_class=HelpFormatter, epilog=EXAMPLES,
        description="Follow a Git branch and reconcile it forever: fetch every --interval\n"
                    "(or at once on a signed webhook or `gitgate reconcile`), hold what gates\n"
                    "hold, apply the rest. Only the replica holding the Lease writes; every\n"
                    "replica is ready while Git and the API server answer it.")
    run.add_argument("--repo", required=True, help="Git URL to follow")
    run.add_argument("--branch", default="main", help="branch to follow")
    run.add_argument("--path", default=".", help="the gitgate repo folder inside the Git repo")
    run.add_argument("--interval", default="1m", help="how often to fetch")
    run.add_argument("--resync", default="10m",
                     help="re-apply unchanged bundles this often (repairs drift)")
    run.add_argument("--status-interval", default="30s",
                     help="re-read what Karmada reports of every bundle (per-cluster "
                          "health, version, suspension for /status and /metrics) this often; "
                          "in between, a pass re-reads the bundles it changed and those not "
                          "settled")
    run.add_argument("--commit-halts", action="store_true",
                     help="when a rollout halts, commit a hold gate for its bundle with the "
                          "reason and push it (lifted in Git like any pause)")
    run.add_argument("--cache-dir", default=str(cache_dir_default()),
                     help="where the checkout lives")
    run.add_argument("--listen", default=":8080",
                     help="HOST:PORT of the web page (/ui/), /healthz, /readyz, /metrics, "
                          "/status, /hooks/git, /reconcile")
    ui_flags(run)
    kube_flags(run, required=True)
    run.add_argument("--git-token-file", help="file holding an HTTPS token for the Git host")
    run.add_argument("--git-token-env", help="environment variable holding that token")
    run.add_argument("--git-username", default="x-access-token",
                     help="user name sent with the token")
    run.add_argument("--git-ssh-key", help="SSH private key file for the Git host")
    run.add_argument("--git-known-hosts", help="known_hosts file (required with an SSH key)")
    verify_flags(run, "apply only a branch head signed by an allowed key; otherwise the last "
                      "such commit stays in force")
    gate_signer_flags(run, "is put back as they left it (a rewritten history with such a "
                           "change is not taken at all)")
    run.add_argument("--notify-urls-file", metavar="FILE",
                     help="notification targets, one apprise URL per line (slack://, "
                          "msteams://, mailto://, json://host/path, ...; mount it from a "
                          "Secret): people are told when a freeze holds or lifts, a rollout "
                          "wave is released or halts, a bundle fails, a freeze is about to "
                          "lift, or the head is not signed")
    run.add_argument("--webhook-secret-file",
                     help="file holding the secret of the Git webhook and of /reconcile "
                          "(without it both are disabled); read again when it changes")
    run.add_argument("--no-leader-elect", action="store_true",
                     help="write without holding the Lease (a single replica)")
    run.add_argument("--shard", action="store_true",
                     help="every replica reconciles a share of the bundles (no idle standby): "
                          "they find each other through Leases, agree on an assignment and "
                          "take over a replica's bundles when its Lease runs out; each keeps "
                          "the full renders of the repo's sources (none holding a Secret) in "
                          "CACHE_DIR-renders, so a takeover reads them instead of rendering")
    run.add_argument("--expect-replicas", type=int, default=1, metavar="N",
                     help="with --shard: at start, wait until N replicas are live (at most "
                          "one lease duration) before the first pass, so a cold start is "
                          "shared instead of done by the first replica up (set it to the "
                          "Deployment's replicas)")
    run.add_argument("--identity", metavar="NAME", type=replica_identity,
                     help="with --shard: the name this replica goes by in the Leases, the "
                          "assignment and the API server's audit log (lowercase letters, "
                          "digits and '-', at most 63; without it, the host name and a random "
                          "suffix). Give every replica its own, e.g. the pod's name; a process "
                          "that finds another renewing its name steps back and writes nothing")
    run.add_argument("--lease-duration", type=int, default=15,
                     help="seconds a leader's Lease lasts without renewal")
    write_flags(run)
    run.add_argument("--log-format", choices=["text", "json"], default="text",
                     help="log line format")
    tool_flags(run)
    run.set_defaults(func=cmd_run)


EXAMPLES = """examples:
  gitgate run --repo https://github.com/acme/fleet.git --webhook-secret-file /etc/gitgate/hook
  gitgate run --repo git@github.com:acme/fleet.git --git-ssh-key /etc/ssh/id \\
      --git-known-hosts /etc/ssh/known_hosts --listen 127.0.0.1:8080
"""


# The cyclic collector's thresholds for the loop. Python's (700, 10, 10) start a young
# collection every 700 new containers; a pass at 5,000 bundles holds ~3 million objects and
# makes hundreds of collections, whose older generations walk the whole heap: about 1.5 s of
# a no-op pass (bench/results/history.md). Collecting less often keeps cyclic garbage longer:
# measured on half of 5,000 bundles, (100,000, 50, 100) saved that time for 90 MB more, (20,000, 20,
# 10) most of it for 25 MB more, below the 400 MB a replica is allowed.
COLLECTOR_THRESHOLDS = (20_000, 20, 10)


def cmd_run(args: argparse.Namespace) -> int:
    # the keyrings of the flags' signers and of those gitgate.yaml names: their gpg daemons
    # stopped and the folder removed when the loop ends (a process killed outright leaves
    # the folder to the system's temporary files)
    with keyring_folder("gitgate-signers-") as keyrings:
        return _run(args, keyrings)


def _run(args: argparse.Namespace, keyrings: Path) -> int:
    # one spelling of the folder for every consumer (`./sub`, `sub/` and `sub` are one
    # folder: the gate guard and the newer-head check compare Git's paths with it)
    args.path = posixpath.normpath(args.path.strip().strip("/") or ".")
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    limit_arenas()  # before any thread: freed memory is not spread over 16 arenas (`heap`)
    # the kubernetes client loads slowly: only when a command talks to a cluster
    from gitgate.apiserver.lease import LeaseElector
    from gitgate.apiserver.transport import tls_verification_off
    from gitgate.apiserver.verbs import KubeCluster

    # every startup mistake is found before anything starts: one line each, exit 2
    setup_logging(args.log_format)
    interval = duration_flag(args.interval, "--interval")
    resync = duration_flag(args.resync, "--resync")
    status_interval = duration_flag(args.status_interval, "--status-interval")
    suspension_timeout = duration_flag(args.suspension_timeout, "--suspension-timeout")
    timeouts = timeouts_from(args)
    listen = parse_listen(args.listen)
    auth = GitAuth.from_settings(args.git_token_file, args.git_token_env, args.git_ssh_key,
                                 args.git_known_hosts, args.git_username)
    trust = trust_from(args, keyrings / "allowed")
    repo_trust = RepoTrust(keyrings / "repo", args.path)
    gate_trust = gate_trust_from(args, keyrings / "gates")
    guard = (GateGuard(gate_trust, args.path) if gate_trust is not None
             else GateGuard(folder=args.path, repo_trust=repo_trust))
    secret = secret_file(args.webhook_secret_file, "--webhook-secret-file",
                         "the webhook secret file")
    urls = read_urls(Path(args.notify_urls_file)) if args.notify_urls_file else []
    ui_token, ui_refresh = ui_settings(args)
    tools = find_tools(args.helm, args.kustomize)
    api = load_api(args)
    if tls_verification_off(api):  # said once, at start
        log.warning("TLS verification is off for %s (insecure-skip-tls-verify)",
                    display_url(api.configuration.host))
    cluster = KubeCluster(api, timeouts=timeouts)
    source = GitSource(args.repo, args.branch, Path(args.cache_dir), auth, trust, guard,
                       repo_trust)
    queries = InstantQueries()  # the Prometheus servers rollout analyses name
    settings = LoopSettings(
        path=args.path, interval=interval, resync=resync, status_interval=status_interval,
        commit_halts=args.commit_halts,
        apply=ApplyOptions(now=args.now(), instance=args.instance,
                           force_conflicts=args.force_conflicts,
                           allow_mass_prune=args.allow_mass_prune,
                           suspension_timeout=suspension_timeout,
                           concurrency=args.apply_concurrency,
                           hook_timeout=duration_flag(args.hook_timeout, "--hook-timeout"),
                           actor="loop", measure=queries.measure))
    identity = args.identity or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"
    api.user_agent = f"gitgate/{__version__} ({identity})"  # the API server's audit log
    lease = args.lease_duration
    deadline = max(2, lease * 2 // 3)
    wake = threading.Event()  # the loop's: a change of the replicas wakes it
    shards = (Membership(cluster, args.instance, identity, lease_duration=lease,
                         renew_deadline=deadline, retry_period=max(1, lease // 7),
                         expected_replicas=max(1, args.expect_replicas), on_change=wake.set)
              if args.shard else None)
    elect = not args.shard and not args.no_leader_elect
    reconciler = Reconciler(
        source, cluster, tools, settings,
        api_probe=lambda: cluster.get("v1", "Namespace", "", SYSTEM_NAMESPACE),
        shards=shards, leader_renew_deadline=deadline if elect else None, wake=wake,
        notifier=Notifier(apprise_sender(urls)) if urls else None,
        charts=ChartFetcher(  # fetched charts outlive restarts on the cache volume
            ChartStore(Path(f"{args.cache_dir}-charts")),
            secret_reader=cluster_secrets(cluster.get, SYSTEM_NAMESPACE), helm=tools.helm),
        # with --shard, a takeover reads the full renders of its new sources from disk
        render_cache=RenderCache(RenderDisk(Path(f"{args.cache_dir}-renders")))
        if args.shard else None,
        records=RecordCache())  # a pass every interval: read again only the records that changed
    reconciler.watch_requests(cluster)  # `gitgate reconcile` through the API server
    reconciler.watch_newer()  # a freeze pushed while a pass writes stops what it covers
    cluster.transport.observer = reconciler.metrics.api_request
    queries.observer = reconciler.metrics.analysis_query
    elector = None

    def stop(*_: object) -> None:
        reconciler.shutdown()
        stop_all()  # a hung helm or kustomize must not hold the shutdown

    # before the endpoints answer: a SIGTERM once /healthz says 200 is a graceful stop
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server = EndpointServer(listen, LoopEndpoints(
        ready=lambda: reconciler.state.ready, status=lambda: loop_document(reconciler.published),
        metrics=reconciler.metrics.exposition,
        trigger=lambda: reconciler.trigger() if elector is None or elector.is_leader()
        else None,
        webhook_secret=secret, request_pass=reconciler.request_pass,
        leading=lambda: elector is None or elector.is_leader(),
        pages=WebUi(page_source(reconciler, ui_refresh), ui_token,
                    secure_cookies=args.ui_secure_cookies).routes())).start()

    lease_held = shards is not None or elect  # gitgate-system holds the Leases
    if lease_held and not _ensure_system_namespace(cluster, reconciler.stop):
        server.stop()
        return 0
    if shards is not None:
        shards.start()
    elif elect:
        renewed, lost = reconciler.lease_callbacks()
        elector = LeaseElector(api, SYSTEM_NAMESPACE, leader_lease(args.instance), identity,
                               lease_duration=lease, renew_deadline=deadline,
                               retry_period=max(1, lease // 7),
                               on_leading=reconciler.trigger,
                               on_problem=reconciler.wake.set,
                               on_renewed=renewed, on_lost=lost).start()
    try:
        reconciler.run(elector.is_leader if elector else (lambda: True),
                       lease_problem=lambda: elector.problem if elector else None)
    finally:
        if elector is not None:
            elector.stop()  # hands the Lease over when this replica held it
        if shards is not None:
            shards.stop()  # its bundles go to the others at once
        server.stop()
        if reconciler.notifier is not None:
            reconciler.notifier.drain(5)
            reconciler.notifier.close()
    return 0
