"""Where a `PAUSE` file may stand: in a source's folder it holds that source. A `PAUSE` a
careless user puts in the folder above the sources (`apps/PAUSE` for `apps/a` and `apps/h`)
is meant to hold them all. Through the real CLI against the API emulator."""

from __future__ import annotations

import pytest

from tests.conftest import write_files
from tests.support.applyrepo import PLACEMENT
from tests.support.applyrepo import apply_cli as apply
from tests.support.manifests import cm

pytestmark = pytest.mark.integration


@pytest.mark.xfail(strict=True, reason="open: a PAUSE holds only the source of its own "
                   "folder; one in a parent folder holds nothing, and nothing says so")
def test_a_pause_in_the_folder_above_the_sources_holds_them(tmp_path, kube, capsys):
    ns = kube.ns("pp")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1"),
        "apps/h/app.yaml": cm("h", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, {"apps/PAUSE": "incident\n", "apps/a/app.yaml": cm("a", ns, "v2")})
    code, doc = apply(capsys, kube, root)
    verdicts = {b["name"]: b["verdict"] for b in doc["bundles"]}
    assert kube.cluster.get("v1", "ConfigMap", ns, "a")["data"]["value"] == "v1", verdicts
    assert verdicts["apps-a"] == verdicts["apps-h"] == "held"
