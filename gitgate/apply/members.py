"""Karmada's member clusters, read from its `cluster.karmada.io` Cluster objects."""

from __future__ import annotations

from gitgate.apiserver.ports import Lister
from gitgate.errors import KubeError

CLUSTER_API = "cluster.karmada.io/v1alpha1"


def member_clusters(cluster: Lister) -> dict[str, dict[str, str]]:
    """Each member cluster's name and labels. Raises KubeError (status 404 when the server
    is not a Karmada control plane)."""
    try:
        found = cluster.list_objects(CLUSTER_API, "Cluster")
    except KubeError as exc:
        if exc.status == 404:
            raise KubeError("the API server serves no cluster.karmada.io Clusters: is it a "
                            "Karmada control plane?", status=404, reason=exc.reason) from None
        raise
    return {c["metadata"]["name"]: dict(c["metadata"].get("labels") or {}) for c in found}
