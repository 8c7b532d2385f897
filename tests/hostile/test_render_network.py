"""Rendering reaches no network and no cluster: a chart's template functions that would
(`getHostByName`, a DNS lookup an attacker could use to send values out in a name;
`lookup`, a read of the cluster) answer nothing. Through the real CLI in a subprocess."""

from __future__ import annotations

from tests.support.hostile import chart, render, rendered_names, repo

TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: probe}
data:
  host: '{{ getHostByName "localhost" }}'
  found: '{{ lookup "v1" "Namespace" "" "kube-system" | toJson }}'
"""


def test_a_template_can_neither_resolve_a_name_nor_read_a_cluster(tmp_path, tools):
    root = repo(tmp_path, chart("probe", **{"templates/probe.yaml": TEMPLATE}))
    result, document = render(root)
    assert "good" in rendered_names(document), document.get("errors")
    probe = next(o for b in document["bundles"] for o in b["objects"]
                 if o["metadata"]["name"] == "probe")
    assert probe["data"] == {"host": "", "found": "{}"}, probe
