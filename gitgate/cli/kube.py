"""The API server connection from `--kubeconfig` / `--context` and the timeout flags."""

from __future__ import annotations

import argparse

from gitgate.apiserver.apierrors import Timeouts, display_url
from gitgate.output import console
from gitgate.passes.onepass import ClusterPort
from gitgate.timespec import duration_flag


def timeouts_from(args: argparse.Namespace) -> Timeouts:
    return Timeouts(
        connect=duration_flag(args.connect_timeout, "--connect-timeout").total_seconds(),
        read=duration_flag(args.request_timeout, "--request-timeout").total_seconds(),
        max_answer=args.max_answer_size)


def cluster_from(args: argparse.Namespace) -> ClusterPort:
    # the kubernetes client loads slowly: only when a command talks to a cluster
    from gitgate.apiserver.transport import load_client, tls_verification_off
    from gitgate.apiserver.verbs import KubeCluster
    timeouts = timeouts_from(args)
    api = load_client(args.kubeconfig, args.context, timeouts=timeouts)
    if tls_verification_off(api):
        console.warn(f"TLS verification is off for {display_url(api.configuration.host)} "
                     "(insecure-skip-tls-verify in the kubeconfig)")
    return KubeCluster(api, timeouts=timeouts)
