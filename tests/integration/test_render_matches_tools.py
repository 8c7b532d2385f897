"""gitgate renders exactly what `helm template --include-crds` and `kustomize build` produce."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gitgate.bundle.group import group_source
from gitgate.charts.stage import ChartFetcher
from gitgate.charts.store import ChartStore
from gitgate.model import BUNDLE_LABEL, ObjectRef, SourceKind
from gitgate.render.helm import release_name_for
from gitgate.render.pipeline import render_repo
from gitgate.render.post import CLUSTER_SCOPED, group_of
from gitgate.yamlio import load_documents
from tests.conftest import EXAMPLES, write_files
from tests.support.democharts import example_fetcher

pytestmark = pytest.mark.integration


def reference_objects(tools, root: Path, source, store: ChartStore | None) -> list[dict]:
    folder = root / source.path
    scratch = None
    if source.kind is SourceKind.HELM:
        chart = folder
        if source.options.chart is not None:  # a published chart: its locked archive
            assert store is not None, source.path
            [locked] = source.options.locked
            chart = store.folder / "sha256" / f"{locked.hex}.tgz"
        argv = [tools.helm, "template", release_name_for(source), str(chart), "--include-crds",
                "--namespace", source.options.namespace]
        for values in source.options.values_files:
            argv += ["--values", str(folder / values)]
        if source.options.values:  # in a scratch folder: the repo stays as it is
            scratch = Path(tempfile.mkdtemp(prefix="gg-values-"))
            (scratch / "values.json").write_text(json.dumps(source.options.values))
            argv += ["--values", str(scratch / "values.json")]
    elif source.kind is SourceKind.KUSTOMIZE:
        argv = [*tools.kustomize, str(folder / (source.options.kustomize_dir or "."))]
    else:
        texts = [(root / f).read_text() for f in source.files]
        return [d.data for t in texts for d in load_documents(t)]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    finally:
        if scratch is not None:
            shutil.rmtree(scratch)
    return [d.data for d in load_documents(out)]


def expected(obj: dict, namespace: str, cluster_kinds: set) -> dict:
    """What gitgate must make of a tool's object: default namespace and the bundle label."""
    meta = dict(obj["metadata"])
    if (group_of(obj), obj["kind"]) not in cluster_kinds and not meta.get("namespace"):
        meta["namespace"] = namespace
    return {**obj, "metadata": meta}


def without_bundle_label(obj: dict) -> dict:
    meta = dict(obj["metadata"])
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != BUNDLE_LABEL}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    return {**obj, "metadata": meta}


def assert_same_as_tools(tools, root: Path, charts: ChartFetcher | None = None) -> int:
    result = render_repo(root, tools, charts=charts)
    assert result.problems == ()
    cluster_kinds = set(CLUSTER_SCOPED) | {
        (o["spec"]["group"], o["spec"]["names"]["kind"])
        for r in result.rendered for o in r.objects
        if o["kind"] == "CustomResourceDefinition" and o["spec"].get("scope") == "Cluster"}
    compared = 0
    for rendered in result.rendered:
        source = rendered.source
        ours = {ObjectRef.of(o): o for b in group_source(rendered) for o in b.objects}
        theirs = {}
        for obj in reference_objects(tools, root, source,
                                     charts.store if charts else None):
            obj = expected(obj, source.options.namespace, cluster_kinds)
            theirs[ObjectRef.of(obj)] = obj
        assert set(ours) == set(theirs), source.path
        for ref, obj in ours.items():
            assert obj["metadata"]["labels"][BUNDLE_LABEL].startswith(
                source.bundle_name.replace("/", "_"))
            assert without_bundle_label(obj) == without_bundle_label(theirs[ref]), str(ref)
        compared += len(ours)
    return compared


def test_examples_repo_renders_like_the_tools(tools, tmp_path):
    charts = example_fetcher(tmp_path / "charts")  # apps/echo: a published chart
    assert assert_same_as_tools(tools, EXAMPLES, charts) >= 32


def test_chart_with_crds_subchart_and_cluster_scoped_custom_kind(tools, tmp_path):
    root = write_files(tmp_path / "repo", {
        "charts/widgets/Chart.yaml": """
            apiVersion: v2
            name: widgets
            version: 0.2.0
            dependencies:
              - name: redis
                version: 1.0.0
        """,
        "charts/widgets/crds/widget.yaml": """
            apiVersion: apiextensions.k8s.io/v1
            kind: CustomResourceDefinition
            metadata: {name: widgets.example.com}
            spec:
              group: example.com
              scope: Cluster
              names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
              versions:
                - name: v1
                  served: true
                  storage: true
                  schema:
                    openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
        """,
        "charts/widgets/values.yaml": "size: 3\nredis: {enabled: true}\n",
        "charts/widgets/templates/widget.yaml": """
            apiVersion: example.com/v1
            kind: Widget
            metadata: {name: {{ .Release.Name }}-widget}
            spec: {size: {{ .Values.size }}}
        """,
        "charts/widgets/charts/redis/Chart.yaml": "apiVersion: v2\nname: redis\nversion: 1.0.0\n",
        "charts/widgets/charts/redis/templates/sts.yaml": """
            apiVersion: apps/v1
            kind: StatefulSet
            metadata: {name: {{ .Release.Name }}-redis}
            spec:
              serviceName: redis
              selector: {matchLabels: {app: redis}}
              template:
                metadata: {labels: {app: redis}}
                spec: {containers: [{name: redis, image: "redis:7"}]}
        """,
        "charts/widgets/bundle.yaml": "namespace: widgets\nvalues: {size: 5}\n",
        "manifests/all.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: plain}
            data: {when: 2024-01-01, flag: "yes"}
        """,
    })
    assert assert_same_as_tools(tools, root) == 4
    result = render_repo(root, tools)
    widget = next(o for r in result.rendered for o in r.objects if o["kind"] == "Widget")
    assert widget["spec"] == {"size": 5} and "namespace" not in widget["metadata"]


def test_cached_rendering_renders_only_changed_sources(tools, tmp_path):
    from gitgate.render.cache import RenderCache

    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    cache = RenderCache()
    charts = example_fetcher(tmp_path / "charts")
    first = render_repo(root, tools, cache=cache, charts=charts)
    assert cache.hits == 0 and cache.misses == len(first.rendered)
    # nothing changed: handed back whole
    second = render_repo(root, tools, cache=cache, charts=charts)
    assert cache.reused == 1 and cache.misses == 0 and second.rendered is first.rendered
    (root / "apps/extra.txt").write_text("not a source")  # the tree moved: source by source
    fourth = render_repo(root, tools, cache=cache, charts=charts)
    assert cache.hits == len(first.rendered) and cache.misses == 0
    assert [r.objects for r in fourth.rendered] == [r.objects for r in first.rendered]
    values = root / "apps/podinfo/values-prod.yaml"
    values.write_text(values.read_text().replace("replicaCount: 3", "replicaCount: 5"))
    third = render_repo(root, tools, cache=cache, charts=charts)
    assert cache.misses == 1 and cache.hits == len(first.rendered) - 1
    podinfo = next(r for r in third.rendered if r.source.path == "apps/podinfo")
    deployment = next(o for o in podinfo.objects if o["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 5
