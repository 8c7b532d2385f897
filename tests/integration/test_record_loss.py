"""What a freeze holds when a Bundle record is lost: someone deletes the record of a held
bundle on the API server (`kubectl delete bundles ...`, taking it for a status object), then a
commit moves one of its live objects into an open bundle. Through the real CLI against the
API emulator's request log."""

from __future__ import annotations

import pytest

from tests.conftest import write_files
from tests.support.applyrepo import PLACEMENT
from tests.support.applyrepo import apply_cli as apply
from tests.support.manifests import cm

pytestmark = pytest.mark.integration



@pytest.fixture(autouse=True)
def emulated(kube):
    if kube.emulator is None:
        pytest.skip("reads the API emulator's request log (GITGATE_TEST_KUBECONFIG is set)")



def test_a_held_bundles_object_stays_when_its_record_is_deleted(tmp_path, kube, capsys):
    ns = kube.ns("rec")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1"),
        "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1"),
    })
    assert apply(capsys, kube, root)[0] == 0
    write_files(root, {"apps/h/PAUSE": "incident\n"})
    assert apply(capsys, kube, root)[0] == 0
    records = [key for key in kube.emulator.state.objects
               if key[1] == "bundles" and key[3].endswith("apps-h")]
    assert records
    for key in records:
        kube.cluster.delete("gitgate.io/v1alpha1", "Bundle", key[2], key[3])
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/app.yaml": cm("h", ns, "v1")})
    code, doc = apply(capsys, kube, root)
    assert {b["name"]: b["verdict"] for b in doc["bundles"]}["apps-h"] == "held"
    import json; print(json.dumps(doc, indent=1)); print(kube.emulator.state.requests)
    assert kube.cluster.get("v1", "ConfigMap", ns, "moving")["data"]["value"] == "v1"
