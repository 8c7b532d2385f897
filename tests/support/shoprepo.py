"""The smallest repo a CLI test applies: one bundle, `app`, with its namespace `shop`, a
ConfigMap and a Service, placed on member `m1`. On a real API server a test names them its
own (`kube.ns(...)`, the run's id in the bundle's name): one test's leftovers stay apart from
the next's."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_files


def shop_files(ns: str = "shop", bundle: str = "app") -> dict[str, str]:
    return {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "app/bundle.yaml": f"name: {bundle}\n",
        "app/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, "
                       f"namespace: {ns}}}\ndata: {{mode: one}}\n",
        "app/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: "
                        f"{ns}}}\nspec: {{ports: [{{port: 80}}]}}\n",
    }


def shop_repo(root: Path, ns: str = "shop", bundle: str = "app") -> Path:
    return write_files(root, shop_files(ns, bundle))
