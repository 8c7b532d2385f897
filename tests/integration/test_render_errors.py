"""Every bad input is reported with its file, and the other sources still render."""

from __future__ import annotations

import json
import os

import pytest

from gitgate.cli import main
from tests.conftest import write_files

pytestmark = pytest.mark.integration

GOOD = {"good/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n"}


def render_json(capsys, root) -> tuple[int, dict]:
    code = main(["render", str(root), "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def assert_only_good_rendered(doc: dict) -> None:
    assert [b["name"] for b in doc["bundles"]] == ["good"]
    assert doc["bundles"][0]["objects"][0]["metadata"]["name"] == "good"


def one_error(doc: dict) -> dict:
    assert len(doc["errors"]) == 1, doc["errors"]
    return doc["errors"][0]


def test_invalid_yaml_names_file_and_line(tools, make_repo, capsys):
    root = make_repo({**GOOD, "bad/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n  name: x\n"})
    code, doc = render_json(capsys, root)
    error = one_error(doc)
    assert code == 1
    assert (error["source"], error["file"], error["line"]) == ("bad", "bad/cm.yaml", 3)
    assert_only_good_rendered(doc)


def test_chart_template_error_names_the_template(tools, make_repo, capsys):
    root = make_repo({**GOOD,
                      "chart/Chart.yaml": "apiVersion: v2\nname: chart\nversion: 0.1.0\n",
                      "chart/templates/cm.yaml": "metadata:\n  name: {{ .Values.missing.deep }}\n"})
    code, doc = render_json(capsys, root)
    error = one_error(doc)
    assert code == 1 and error["file"] == "chart/templates/cm.yaml" and error["line"] == 2
    assert "nil pointer" in error["message"]
    assert_only_good_rendered(doc)


def test_kustomization_loading_a_file_outside_its_folder(tools, make_repo, capsys):
    root = make_repo({**GOOD, "gitgate.yaml": "paths: [good, kust]\n",
                      "shared/patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\n",
                      "kust/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\n",
                      "kust/kustomization.yaml": "resources: [cm.yaml]\n"
                                                 "patches: [{path: ../shared/patch.yaml}]\n"})
    code, doc = render_json(capsys, root)
    error = one_error(doc)
    assert code == 1 and error["source"] == "kust" and error["file"] == "kust"
    assert "is not in or below" in error["message"]
    assert_only_good_rendered(doc)


@pytest.mark.parametrize("kind", ["raw", "helm", "kustomize"])
def test_symlink_pointing_outside_the_repo(tools, make_repo, capsys, tmp_path, kind):
    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n")
    files = {**GOOD, "linked/real.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\n"}
    if kind == "helm":
        files["linked/Chart.yaml"] = "apiVersion: v2\nname: linked\nversion: 0.1.0\n"
    if kind == "kustomize":
        files["linked/kustomization.yaml"] = "resources: [real.yaml, evil.yaml]\n"
    root = make_repo(files)
    target = root / "linked" / ("templates" if kind == "helm" else ".")
    target.mkdir(exist_ok=True)
    os.symlink(outside, target / "evil.yaml")
    code, doc = render_json(capsys, root)
    error = one_error(doc)
    assert code == 1 and error["source"] == "linked"
    assert "evil.yaml" in error["file"] or "evil.yaml" in error["message"]
    assert "outside the repo" in error["message"]
    assert "stolen" not in json.dumps(doc)
    assert_only_good_rendered(doc)


def test_remote_base_is_refused_before_kustomize_runs(tools, make_repo, capsys):
    root = make_repo({**GOOD, "remote/kustomization.yaml":
                      "resources:\n  - https://github.com/kubernetes-sigs/kustomize//examples/"
                      "helloWorld?ref=v5.0.0\n"})
    code, doc = render_json(capsys, root)
    error = one_error(doc)
    assert code == 1 and error["file"] == "remote/kustomization.yaml"
    assert "remote base" in error["message"] and "refused" in error["message"]
    assert_only_good_rendered(doc)


def test_chart_with_missing_dependencies(tools, make_repo, capsys):
    root = make_repo({**GOOD, "chart/Chart.yaml": """
        apiVersion: v2
        name: chart
        version: 0.1.0
        dependencies:
          - name: postgresql
            version: 12.1.0
            repository: https://charts.bitnami.com/bitnami
    """, "chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
    code, doc = render_json(capsys, root)
    error = one_error(doc)
    assert code == 1 and error["file"] == "chart/Chart.yaml"
    assert "postgresql" in error["message"] and "vendor" in error["message"]
    assert_only_good_rendered(doc)


def test_duplicate_object_across_two_sources_names_both(tools, make_repo, capsys):
    dup = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same, namespace: ns}\n"
    root = make_repo({**GOOD, "one/cm.yaml": dup, "two/cm.yaml": dup})
    code, doc = render_json(capsys, root)
    assert code == 1
    by_source = {e["source"]: e["message"] for e in doc["errors"]}
    assert set(by_source) == {"one", "two"}
    assert "also rendered by two" in by_source["one"] and "ConfigMap ns/same" in by_source["one"]
    assert_only_good_rendered(doc)


def test_yaml_output_has_a_comment_per_bundle_and_exit_0(tools, make_repo, capsys):
    root = write_files(make_repo(GOOD), {"other/s.yaml": "apiVersion: v1\nkind: Secret\n"
                                         "metadata: {name: s}\nstringData: {pw: hunter2}\n"})
    assert main(["render", str(root)]) == 0
    out = capsys.readouterr().out
    assert "# bundle good (source good, raw)" in out and "# bundle other" in out
    assert "hunter2" not in out and "pw: <redacted sha256:" in out
    assert main(["render", str(root), "--show-secrets"]) == 0
    assert "hunter2" in capsys.readouterr().out
