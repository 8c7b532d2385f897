"""The API server connection from `--kubeconfig` / `--context`."""

from __future__ import annotations

import argparse

from gitgate.apply.engine import ClusterPort


def cluster_from(args: argparse.Namespace) -> ClusterPort:
    from gitgate.apply.kube import KubeCluster, load_client  # the kubernetes client loads slowly
    return KubeCluster(load_client(args.kubeconfig, args.context))
