"""The smallest repo a CLI test applies: one bundle, `app`, with its namespace `shop`, a
ConfigMap and a Service, placed on member `m1`."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_files

SHOP_REPO = {
    "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
    "app/bundle.yaml": "name: app\n",
    "app/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n",
    "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, "
                   "namespace: shop}\ndata: {mode: one}\n",
    "app/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: "
                    "shop}\nspec: {ports: [{port: 80}]}\n",
}


def shop_repo(root: Path) -> Path:
    return write_files(root, SHOP_REPO)
