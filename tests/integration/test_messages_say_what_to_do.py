"""Issue 61, item 4: every message a new user met says what happened, where (file:line, list
indexes counted from 0 as in Kubernetes paths) and what to do, with no internal label
(`[InvalidConfig]`) or library exception. The real CLI in subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, committed_repo, write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration

LABELS = ("[Error]", "[InvalidConfig]", "[RenderFailed]", "[GitFailed]", "Traceback", "Cmd(")


def assert_plain(text: str) -> None:
    for label in LABELS:
        assert label not in text, text


CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: shop}\n"


def test_an_unclosed_bracket_names_its_line_and_how_to_close_it(tmp_path):
    """It read `expected ',(…)](…)<stream end>'`, on the line after the file's end: the
    redaction of values took YAML's own `','` and `']'` for a value."""
    root = write_files(tmp_path / "repo", {
        "apps/web/bundle.yaml": "name: apps-web\n",
        "apps/web/cm.yaml": CM + "data:\n  mode: [blue, green\n"})
    planned = gitgate("plan", str(root))
    assert planned.returncode == 1
    assert ("error: apps/web/cm.yaml:5: invalid YAML: the list '[' opened on line 5 is never "
            "closed (expected ',' or ']', but got the end of the file); close it with ']'"
            ) in planned.stdout.splitlines()
    assert "(…)" not in planned.stdout
    assert_plain(planned.stdout + planned.stderr)


DOCUMENTED_CUSTOMIZATION = """\
name: apps-web
clusters:
  - clusters: [member2]
    patches:
      - patch: {apiVersion: v1, kind: ConfigMap, metadata: {name: web-config},
                data: {mode: blue}}                              # strategic merge
"""


def documented_customization() -> str:
    """The `clusters:` example of the manual's "Per-cluster changes" page, as written."""
    text = (REPO_ROOT / "docs/concepts/per-cluster.md").read_text()
    section = text.split("## Per-cluster values as data")[1]
    return section.split("```yaml\n")[1].split("```")[0]


CHART = {
    "Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    "values.yaml": "replicaCount: 2\nimage: {tag: 6.7.1}\n",
    "templates/web.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        "spec:\n  replicas: {{ .Values.replicaCount }}\n  selector: {matchLabels: {app: web}}\n"
        "  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: "
        "web, image: 'web:{{ .Values.image.tag }}'}]}\n---\n" + CM + "data: {mode: green}\n"),
}


def test_the_documented_customization_runs_as_written_on_namespaced_objects(tmp_path):
    """kustomize alone looks for a strategic-merge patch without a namespace outside every
    namespace; the manual's example acts on a namespaced ConfigMap all the same."""
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: "
                        "[member1, member2]}}}\n",
        "apps/web/bundle.yaml": "name: apps-web\n" + documented_customization(),
        **{f"apps/web/{k}": v for k, v in CHART.items()}})
    rendered = gitgate("render", str(root), "--cluster", "member2", "-o", "json")
    assert rendered.returncode == 0, rendered.stderr
    objects = {o["kind"]: o for o in json.loads(rendered.stdout)["bundles"][0]["objects"]}
    assert objects["ConfigMap"]["data"] == {"mode": "blue"}
    assert objects["ConfigMap"]["metadata"]["namespace"] == "shop"
    web = objects["Deployment"]
    assert web["spec"]["replicas"] == 5  # the values said 1, the JSON 6902 patch 5
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "web:6.7.2"


def test_a_failed_patch_is_named_from_0_with_its_line_and_what_kustomize_said(tmp_path):
    """It said `kustomize build apps/web/bundle.yaml failed` (no such build ran), counted
    `clusters[1]` for the first entry and gave no line."""
    root = write_files(tmp_path / "repo", {
        "apps/web/bundle.yaml": DOCUMENTED_CUSTOMIZATION + (
            "      - target: {kind: ConfigMap, name: web-config}\n"
            "        patch: [{op: replace, path: /spec/nosuch, value: 5}]\n"
            "  - clusters: [member1]\n"
            "    patches:\n"
            "      - target: {kind: Deployment, name: web}\n"
            "        patch: [{op: replace, path: /spec/replicas, value: 5}]\n"),
        "apps/web/cm.yaml": CM + "data: {mode: green}\n"})
    planned = gitgate("plan", str(root))
    assert planned.returncode == 1
    line = next(x for x in planned.stdout.splitlines() if x.startswith("error: "))
    assert line.startswith("error: apps/web/bundle.yaml:7: clusters[0].patches[1] (clusters "
                           "member2): kustomize cannot apply it: replace operation does not "
                           "apply: doc is missing path: /spec/nosuch"), line
    assert "kustomize build" not in planned.stdout + planned.stderr
    assert_plain(planned.stdout + planned.stderr)
    # once that patch is right, the next entry's target names nothing the bundle renders
    text = (root / "apps/web/bundle.yaml").read_text().replace("/spec/nosuch, value: 5",
                                                                "/data/mode, value: red")
    (root / "apps/web/bundle.yaml").write_text(text)
    planned = gitgate("plan", str(root))
    assert ("error: apps/web/bundle.yaml:11: clusters[1].patches[0] (clusters member1): its "
            "target names Deployment web, which this bundle does not render (it renders "
            "ConfigMap web-config); fix the target") in planned.stdout


def test_a_config_path_counts_from_0_and_names_its_line(tmp_path):
    root = write_files(tmp_path / "repo", {
        "apps/web/bundle.yaml": "name: apps-web\nclusters:\n  - clusters: [member1]\n"
                                "    values: {a: 1}\n  - clusters: [member2]\n",
        "apps/web/cm.yaml": CM})
    planned = gitgate("plan", str(root))
    assert ("error: apps/web/bundle.yaml:5: clusters[1] changes nothing: give values (Helm "
            "sources) or patches") in planned.stdout.splitlines()


def test_a_kubeconfig_that_cannot_be_used_is_named_with_where_it_came_from(tmp_path):
    """It said `cannot load a kubeconfig (…); pass --kubeconfig or set KUBECONFIG` to someone
    who had passed --kubeconfig, without naming the file."""
    missing = gitgate("status", "--kubeconfig", "/nonexistent/karmada.config")
    assert missing.returncode == 2
    assert missing.stderr == ("error: --kubeconfig /nonexistent/karmada.config: no such file; "
                              "check the path\n")
    from_env = gitgate("status", env={"KUBECONFIG": str(tmp_path / "gone")})
    assert from_env.stderr.startswith(f"error: $KUBECONFIG names {tmp_path / 'gone'}, which "
                                      "does not exist")
    broken = tmp_path / "broken.config"
    broken.write_text("apiVersion: v1\nclusters: [{name: c}\n")
    said = gitgate("status", "--kubeconfig", str(broken))
    assert said.returncode == 2
    assert said.stderr.startswith(f"error: {broken}:2: not a kubeconfig (--kubeconfig): invalid "
                                  "YAML: the list '[' opened on line 2 is never closed")
    context = tmp_path / "one.config"
    context.write_text("apiVersion: v1\ncurrent-context: a\nclusters: [{name: c, cluster: "
                       "{server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\n"
                       "contexts: [{name: a, context: {cluster: c, user: u}}]\n")
    wrong = gitgate("status", "--kubeconfig", str(context), "--context", "prod")
    assert wrong.stderr == (f"error: --context prod: {context} (--kubeconfig) has no context "
                            "named 'prod' (its contexts: a); pass --context with one of them\n")
    for result in (missing, from_env, said, wrong):
        assert "pass --kubeconfig or set KUBECONFIG" not in result.stderr
        assert_plain(result.stderr)


def test_approve_twice_says_already_approved(tmp_path, tools):
    root = write_files(tmp_path / "repo", {
        "apps/web/bundle.yaml": "name: web\n", "apps/web/cm.yaml": CM,
        "gates/freeze.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: "
                             "freeze}\nspec: {bundles: [web], reason: INC-1}\n"})
    committed_repo(root)
    first = gitgate("approve", "web", "--repo", str(root))
    assert first.returncode == 0, first.stderr
    again = gitgate("approve", "web", "--repo", str(root))
    assert again.returncode == 0, again.stderr
    assert "web is already approved at digest " in again.stdout
    assert "nothing to commit" in again.stdout and "committed" not in again.stdout
    assert_plain(again.stderr + again.stdout)


def test_a_bundle_name_typo_has_no_internal_label(tmp_path, kube):
    Path(tmp_path / "x").mkdir()
    typo = gitgate("get", "nosuch", "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id,
                   "--request-timeout", "10s")
    assert typo.returncode in (0, 2)
    described = gitgate("describe", "nosuch", "--kubeconfig", kube.kubeconfig, "--instance",
                        kube.run_id)
    assert described.returncode == 2
    assert described.stderr.startswith("error: no bundle 'nosuch' is recorded")
    assert_plain(described.stderr)
