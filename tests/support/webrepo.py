"""A repo with one web bundle placed on two members of the emulator."""

from __future__ import annotations

from tests.conftest import write_files
from tests.support.manifests import cm, deployment

NS = "shop"

PLACEMENT = "defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"


def app(image: str, configmaps: int = 1) -> str:
    return cm("web-config", NS) + deployment("web", NS, image) + "".join(
        cm(f"extra-{i}", NS) for i in range(configmaps - 1))


def web_repo(tmp_path, emulator, bundle_extra: str = "") -> tuple:
    """A namespace bundle and `web` (a ConfigMap and a Deployment) placed on member1 and
    member2; the repo folder and the flags that reach the emulator."""
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/bundle.yaml": "name: ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n",
        "web/bundle.yaml": "name: web\ndependsOn: [ns]\n" + bundle_extra,
        "web/app.yaml": app("web:1")})
    return root, ["--kubeconfig", str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))]
