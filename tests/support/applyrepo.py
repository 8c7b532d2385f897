"""A repo of three bundles (<run>-ns, <run>-web, <run>-db) applied to the test cluster."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from gitgate.apply.work import ApplyOptions
from gitgate.cli import main
from gitgate.passes.onepass import reconcile
from tests.conftest import write_files
from tests.support.manifests import cm, deployment

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)


PLACEMENT = "defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"


class Repo:
    """A gitgate repo in a temp folder with three bundles: <run>-ns, <run>-web, <run>-db."""

    def __init__(self, root: Path, kube):
        self.root, self.kube, self.run = root, kube, kube.run_id
        self.web_ns, self.db_ns = kube.ns("web"), kube.ns("db")
        write_files(root, {
            "gitgate.yaml": PLACEMENT,
            "ns/bundle.yaml": f"name: {self.run}-ns\n",
            "ns/namespaces.yaml": "".join(
                f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
                for n in (self.web_ns, self.db_ns)),
            "web/bundle.yaml": f"name: {self.run}-web\ndependsOn: [{self.run}-ns]\n"
                               "labels: {tier: web}\n",
            "web/app.yaml": deployment("web", self.web_ns) + cm("web-config", self.web_ns)
            + "".join(cm(f"extra-{i}", self.web_ns) for i in range(4)),
            "db/bundle.yaml": f"name: {self.run}-db\n",
            "db/app.yaml": cm("db-config", self.db_ns) + deployment("db", self.db_ns),
        })

    def write(self, files: dict[str, str]) -> None:
        write_files(self.root, files)

    def remove(self, rel: str) -> None:
        (self.root / rel).unlink()

    def apply(self, tools, at: datetime = NOW, **options):
        self.kube.cluster.forget()
        return reconcile(self.root, tools, self.kube.cluster,
                         ApplyOptions(now=at, instance=self.run, **options)).result

    def live(self, api_version: str, kind: str, namespace: str, name: str):
        return self.kube.cluster.get(api_version, kind, namespace, name)


def result_of(result, suffix: str):
    return next(b for b in result.bundles if b.bundle.endswith(suffix))


def apply_cli(capsys, kube, root: Path) -> tuple[int, dict]:
    """`gitgate apply ROOT -o json` (the real CLI, in this process) into the test cluster,
    the API emulator's request log cleared first: its exit code and its document."""
    capsys.readouterr()
    kube.emulator.state.requests.clear()
    code = main(["apply", str(root), "--kubeconfig", kube.kubeconfig, "--instance",
                 kube.run_id, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)
