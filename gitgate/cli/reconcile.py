"""`gitgate reconcile [BUNDLE] [--wait]`: ask a running `gitgate run` for a pass now, like
`flux reconcile` or `argocd app sync`. With `--kubeconfig` (or `$KUBECONFIG`, unless
`--secret-file` is given): through the API server, an
annotation on the bundles' Bundle objects that the loop watches and acknowledges in their
status (`passes.requests`); no port-forward, no secret. Otherwise the loop's `POST
/reconcile`, authenticated with the webhook secret; a standby answers 503 and the request is
sent again, so a Service in front of several replicas reaches the leader."""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

from gitgate.cli.flags import HelpFormatter, completes, kube_flags, read_secret_file
from gitgate.cli.kube import cluster_asked, cluster_from
from gitgate.errors import ConfigError, GitgateError
from gitgate.model import Verdict
from gitgate.output import console
from gitgate.passes.bundleglob import selected
from gitgate.passes.leading import leadership
from gitgate.passes.recorded import recorded_status
from gitgate.passes.requests import handled, request_reconcile
from gitgate.timespec import duration_flag

EXAMPLES = """examples:
  gitgate reconcile --kubeconfig karmada.config --wait          (through the API server)
  gitgate reconcile 'shop/*' --kubeconfig karmada.config --wait
  kubectl -n gitgate-system port-forward deploy/gitgate 8080 &
  gitgate reconcile --secret-file hook-secret --wait
  GITGATE_URL=http://gitgate.gitgate-system:8080 gitgate reconcile --secret-file s --wait
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reconcile = sub.add_parser(
        "reconcile", help="make a running `gitgate run` fetch and reconcile now",
        description="Ask the leading `gitgate run` for a pass now, due or not.",
        formatter_class=HelpFormatter, epilog=EXAMPLES)
    reconcile.add_argument("--url", default=os.environ.get("GITGATE_URL",
                                                           "http://127.0.0.1:8080"),
                           help="the loop's endpoint ($GITGATE_URL)")
    completes(reconcile.add_argument(
        "bundle", nargs="?", help="with --kubeconfig: the bundles (a glob) whose Bundle objects "
                                  "carry the request (default: every one)"))
    reconcile.add_argument("--secret-file",
                           help="without --kubeconfig: file holding the loop's "
                                "--webhook-secret-file secret")
    reconcile.add_argument("--wait", action="store_true",
                           help="wait for the pass and report how it went")
    reconcile.add_argument("--timeout", default="5m", help="how long to wait")
    kube_flags(reconcile, required=False)
    reconcile.set_defaults(func=cmd_reconcile)


def _call(url: str, *, secret: bytes | None = None, timeout: float = 10.0
          ) -> tuple[int, Any]:
    request = urllib.request.Request(url, method="POST" if secret else "GET",
                                     data=b"" if secret else None)
    if secret:
        request.add_header("Authorization", "Bearer " + secret.decode())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise GitgateError(f"cannot reach gitgate at {url}: {reason}") from None
    try:
        return status, json.loads(raw)
    except json.JSONDecodeError:
        return status, raw.decode("utf-8", "replace").strip()


def cmd_reconcile(args: argparse.Namespace) -> int:
    if args.kubeconfig or args.context or (cluster_asked(args) and not args.secret_file):
        return _through_the_api(args)
    if args.bundle is not None:
        raise ConfigError("BUNDLE is for a request through the API server: add --kubeconfig "
                          "(or set KUBECONFIG)")
    if not args.secret_file:
        raise ConfigError("pass --kubeconfig or set KUBECONFIG (through the API server), or "
                          "--secret-file (the loop's webhook endpoint at --url)")
    secret = read_secret_file(args.secret_file, "--secret-file")
    timeout = duration_flag(args.timeout, "--timeout").total_seconds()
    deadline = time.monotonic() + timeout
    base = args.url.rstrip("/")
    while True:
        status, body = _call(base + "/reconcile", secret=secret)
        if status != 503 or time.monotonic() >= deadline:
            break
        time.sleep(0.5)  # a standby answered; a Service sends the next try elsewhere
    if status != 202:
        raise GitgateError(f"gitgate at {base} refused the request ({status}): {body}")
    before = int(body.get("passesBefore", 0))
    console.out(f"reconcile requested at {base}")
    if not args.wait:
        return 0
    while time.monotonic() < deadline:
        _, loop = _call(base + "/status")
        if isinstance(loop, dict) and int(loop.get("passes", 0)) > before:
            if loop.get("lastError"):
                console.out(f"pass failed: {loop['lastError']}")
                return 1
            console.out(f"reconciled revision {str(loop.get('revision') or '')[:12]} "
                        f"({loop.get('lastReason')})")
            return 0
        time.sleep(0.5)
    console.out(f"timed out after {args.timeout} waiting for the pass (--timeout)")
    return 1


def _through_the_api(args: argparse.Namespace) -> int:
    """Stamp the request on the Bundles; with --wait, follow it until a running loop says
    it handled it, and report each bundle's verdict."""
    cluster = cluster_from(args)
    known = [inv.bundle for inv in recorded_status(cluster, args.instance).inventories]
    if not known:
        raise GitgateError(f"no bundle is recorded for --instance {args.instance}: nothing to "
                           "reconcile (has a `gitgate run` applied anything here?)")
    chosen = selected(known, args.bundle, "reconcile") if args.bundle else known
    token = datetime.now(UTC).isoformat(timespec="microseconds")
    names = request_reconcile(cluster, args.instance, chosen, token)
    console.out(f"reconcile requested for {len(names)} bundle(s) at {token}")
    if not args.wait:
        return 0
    deadline = time.monotonic() + duration_flag(args.timeout, "--timeout").total_seconds()
    waiting = dict(zip(names, chosen, strict=True))
    failed = False
    asked_lease = 0.0
    while waiting and time.monotonic() < deadline:
        if time.monotonic() >= asked_lease:  # a loop that is not there never answers
            asked_lease = time.monotonic() + LEASE_EVERY
            leads = leadership(cluster, args.instance, args.now())
            if leads.nobody():
                console.out(f"no `gitgate run` leads instance {args.instance} ({leads.said}): "
                            "nothing will handle the request until one runs; start `gitgate "
                            "run` (or look at its pods), the request stays on the bundles")
                return 1
        for name, bundle in list(waiting.items()):
            done = handled(cluster, name, token)
            if done is None:
                continue
            status = done.get("status") or {}
            verdict = str(status.get("verdict") or "?")
            failed = failed or verdict == Verdict.FAILED
            console.out(f"{bundle}: {verdict} at {str(status.get('lastAttemptedRevision'))[:12]}"
                        + (f" ({status.get('message')})" if verdict != Verdict.APPLY else ""))
            del waiting[name]
        if waiting:
            time.sleep(0.25)
    if waiting:
        console.out(f"timed out after {args.timeout} waiting for a running `gitgate run` to "
                    f"handle the request of {', '.join(sorted(waiting.values()))} (--timeout)")
        return 1
    return 1 if failed else 0


LEASE_EVERY = 5.0  # seconds between reads of the instance's Leases while waiting
