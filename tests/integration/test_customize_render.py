"""Per-cluster customizations rendered with the real helm and kustomize, compiled into
overrides, and written to the API (the emulator over HTTP, or a real Karmada): Helm values per
cluster, JSON 6902 and strategic-merge patches on any source, and every refusal naming the file
and the entry."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest

from gitgate.bundle.group import group_all
from gitgate.karmada.effective import member_view
from gitgate.model import ObjectRef
from gitgate.render.pipeline import render_repo
from tests.conftest import write_files
from tests.support.applyrepo import NOW, PLACEMENT, Repo
from tests.support.manifests import CUSTOMIZED_WEB, api_chart, web_patches

pytestmark = pytest.mark.integration
WEB = CUSTOMIZED_WEB
RAW_CUSTOMIZED = "name: web\nnamespace: shop\n" + web_patches(5)
CHART = {
    **api_chart("api", "1"),
    "api/bundle.yaml": textwrap.dedent("""\
        name: api
        namespace: shop
        clusters:
          - clusters: [member2]
            values: {replicas: 5, image: {tag: "2"}}
          - labelSelector: {matchLabels: {region: eu}}
            values: {replicas: 3}
        """),
}


def rendered(tmp_path, tools, files):
    root = write_files(tmp_path / "repo", {"gitgate.yaml": PLACEMENT, **files})
    result = render_repo(root, tools)
    return result, {b.name: b for b in group_all(result.rendered)}


def test_raw_yaml_patches_compile_into_overrides_for_the_member(tmp_path, tools):
    result, bundles = rendered(tmp_path, tools, {"web/bundle.yaml": RAW_CUSTOMIZED,
                                                 "web/app.yaml": WEB})
    assert result.problems == ()
    web = bundles["web"]
    assert {o.ref for o in web.customized} == {ObjectRef("apps", "Deployment", "shop", "web"),
                                               ObjectRef("", "ConfigMap", "shop", "web-config")}
    view = member_view([web], "member2")
    by_kind = {o["kind"]: o for o in view.objects["web"]}
    assert by_kind["Deployment"]["spec"]["replicas"] == 5
    assert by_kind["ConfigMap"]["data"] == {"mode": "blue", "size": "1"}  # merged, not replaced
    default = {o["kind"]: o for o in web.objects}
    assert default["Deployment"]["spec"]["replicas"] == 2
    member1 = {o["kind"]: o for o in member_view([web], "member1").objects["web"]}
    assert member1 == default


def test_helm_values_per_cluster_render_the_chart_again(tmp_path, tools):
    result, bundles = rendered(tmp_path, tools, CHART)
    assert result.problems == ()
    [api] = bundles["api"].customized
    [member2, eu] = api.rules
    assert member2.target_cluster == {"clusterNames": ["member2"]}
    assert {(op["path"], op["value"]) for op in member2.operations} == {
        ("/spec/replicas", 5), ("/spec/template/spec/containers/0/image", "nginx:2")}
    assert eu.target_cluster == {"labelSelector": {"matchLabels": {"region": "eu"}}}
    assert [(op["path"], op["value"]) for op in eu.operations] == [("/spec/replicas", 3)]
    view = member_view([bundles["api"]], "member1", {"region": "eu"})
    [deployment] = view.objects["api"]
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
    elsewhere = member_view([bundles["api"]], "member3", {"region": "eu"})
    assert elsewhere.objects == {}  # the placement does not send it there


@pytest.mark.parametrize(("files", "expected"), [
    ({"web/bundle.yaml": "name: web\nclusters:\n  - clusters: [member2]\n    values: {a: 1}\n",
      "web/app.yaml": WEB}, "values are for Helm charts"),
    ({"web/bundle.yaml": RAW_CUSTOMIZED.replace(
        "data: {mode: blue}", "data: {mode: blue}\n      - patch:\n          apiVersion: v1\n"
        "          kind: ConfigMap\n          metadata: {name: extra}\n          data: {}\n"),
      "web/app.yaml": WEB}, "clusters[0]"),
    ({"web/bundle.yaml": "name: web\nclusters:\n  - clusters: [member2]\n    patches:\n"
                         "      - target: {kind: Deployment, name: web}\n"
                         "        patch: [{op: replace, path: /spec/nothing/here, value: 1}]\n",
      "web/app.yaml": WEB}, "kustomize"),
    ({"web/bundle.yaml": "name: web\nclusters:\n  - clusters: [member2]\n",
      "web/app.yaml": WEB}, "changes nothing"),
    ({"web/bundle.yaml": "name: web\nclusters:\n  - clusters: [member2]\n    patches: [{}]\n",
      "web/app.yaml": WEB}, "clusters[0].patches[0]"),
    ({"web/bundle.yaml": "name: web\nclusters:\n  - {clusters: [m2], values: {a: 1}}\n"
                         "  - {clusters: [m2], values: {a: 2}}\n",
      "web/app.yaml": WEB}, "already customized"),
    ({**CHART, "api/bundle.yaml": "name: api\nclusters:\n  - clusters: [member2]\n"
                                  "    values: {image: {tag: '{{'}}\n",
      "api/templates/more.yaml": "{{ if eq .Values.image.tag \"{{\" }}{{ fail \"no\" }}"
                                 "{{ end }}\n"}, "clusters[0]"),
])
def test_a_bad_customization_fails_its_source_naming_the_entry(tmp_path, tools, files,
                                                               expected):
    result, bundles = rendered(tmp_path, tools, files)
    [problem] = [p for p in result.problems]
    assert expected in problem.message, problem.message
    assert problem.file and problem.file.endswith("bundle.yaml") or "templates" in str(
        problem.file), problem
    assert all(b.failed for b in bundles.values())


def test_the_generated_overrides_are_applied_held_and_pruned_with_their_bundle(tmp_path,
                                                                               tools, kube):
    repo = Repo(tmp_path / "repo", kube)
    ns = repo.web_ns
    customized = RAW_CUSTOMIZED.replace("name: web\nnamespace: shop", f"name: {repo.run}-c\n"
                                        f"namespace: {ns}\ndependsOn: [{repo.run}-ns]")
    renamed = {"name: web}": "name: cweb}", "name: web-config": "name: cweb-config"}
    app, config = WEB, customized
    for old, new in renamed.items():
        app, config = app.replace(old, new), config.replace(old, new)
    repo.write({"c/bundle.yaml": config, "c/app.yaml": app})
    result = repo.apply(tools)
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    name = f"gitgate.{repo.run}.{repo.run}-c.deployment.cweb"  # the instance in the name
    policy = repo.live("policy.karmada.io/v1alpha1", "OverridePolicy", ns, name)
    assert policy["spec"]["overrideRules"][0]["overriders"]["plaintext"] == [
        {"path": "/spec/replicas", "operator": "replace", "value": 5}]

    repo.write({"c/bundle.yaml": f"name: {repo.run}-c\nnamespace: {ns}\n"
                                 f"dependsOn: [{repo.run}-ns]\n"})
    result = repo.apply(tools, NOW + timedelta(minutes=1))
    assert result.ok and repo.live("policy.karmada.io/v1alpha1", "OverridePolicy", ns,
                                   name) is None


def test_render_and_plan_cluster_on_the_command_line(tmp_path, tools):
    root = write_files(tmp_path / "repo", {"gitgate.yaml": PLACEMENT,
                                           "web/bundle.yaml": RAW_CUSTOMIZED,
                                           "web/app.yaml": WEB, **CHART})
    cli = [sys.executable, "-m", "gitgate.cli"]
    done = subprocess.run([*cli, "render", str(root), "--cluster", "member2", "-o", "json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert '"replicas": 5' in done.stdout and '"mode": "blue"' in done.stdout
    assert "region" in done.stderr  # the label-selected customization is named, not guessed
    done = subprocess.run([*cli, "plan", str(root), "--cluster", "member2"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "on member2:" in done.stdout
    assert "replace /spec/replicas = 5 (OverridePolicy gitgate-web.deployment.web)" in \
        done.stdout
