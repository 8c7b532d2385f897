"""What the integration tests drive: a KubeCluster that records gitgate's requests, against
the emulator or a real cluster (GITGATE_TEST_KUBECONFIG)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ruamel.yaml import YAML

from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.inventory import NAMESPACE
from gitgate.errors import KubeError
from tests.support.shared_data import karmada_crds_dir


class RecordingKube(KubeCluster):
    """The real client, with a log of every request gitgate sent (method, path, query)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, str, dict]] = []
        self.accepts: list[tuple[str, str]] = []  # (path, Accept) of every GET

    def request(self, method, path, *, query=None, body=None, content_type=None,
                accept="application/json"):
        dry = (query or {}).get("dryRun") == "All"
        self.sent.append((method, path, dict(query or {}), dry))
        if method == "GET":
            self.accepts.append((path, accept))
        return super().request(method, path, query=query, body=body, content_type=content_type,
                               accept=accept)

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p, _, dry in self.sent if m in ("PATCH", "POST", "PUT", "DELETE")
                and not dry]

    def forget(self) -> None:
        self.sent.clear()
        self.accepts.clear()


def install_karmada_crds(cluster: KubeCluster) -> None:
    names = []
    for file in sorted(karmada_crds_dir().glob("policy.karmada.io_*.yaml")):
        crd = YAML(typ="safe").load(file.read_text())
        cluster.apply(crd, force=True)
        names.append(crd["metadata"]["name"])
    cluster.wait_established(names)


@dataclass
class KubeTarget:
    cluster: RecordingKube
    emulator: object | None
    run_id: str
    kubeconfig: str = ""
    namespaces: list[str] = field(default_factory=list)

    def ns(self, name: str) -> str:
        """A namespace name unique to this run."""
        full = f"{self.run_id}-{name}"
        if full not in self.namespaces:
            self.namespaces.append(full)
        return full

    def bundle_writes(self) -> list[tuple[str, str]]:
        """Writes to anything but gitgate's own records (and their namespace and type)."""
        return [w for w in self.cluster.writes() if f"/namespaces/{NAMESPACE}/" not in w[1]
                and not w[1].endswith((f"/namespaces/{NAMESPACE}", "/bundles.gitgate.io"))]

    def cleanup(self) -> None:
        for policy in self.cluster.list_objects("policy.karmada.io/v1alpha1",
                                                "ClusterPropagationPolicy"):
            if self.run_id in policy["metadata"]["name"]:
                self.cluster.delete("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", "",
                                    policy["metadata"]["name"])
        for namespace in self.namespaces:
            self.cluster.delete("v1", "Namespace", "", namespace)
        mine = f"gitgate.io/instance={self.run_id}"
        for api, kind in (("v1", "ConfigMap"), ("gitgate.io/v1alpha1", "Bundle"),
                          ("events.k8s.io/v1", "Event")):
            try:
                found = self.cluster.list_objects(api, kind, NAMESPACE, mine)
            except KubeError:  # no Bundle type: nothing of it to delete
                continue
            for obj in found:
                self.cluster.delete(api, kind, NAMESPACE, obj["metadata"]["name"])
        lease = f"gitgate-{self.run_id}"
        if self.cluster.get("coordination.k8s.io/v1", "Lease", NAMESPACE, lease) is not None:
            self.cluster.delete("coordination.k8s.io/v1", "Lease", NAMESPACE, lease)
