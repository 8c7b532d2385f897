"""`gitgate check` for CI, and pause labels set through each kind of source."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest

from gitgate.cli import main
from gitgate.model import ReasonKind
from gitgate.passes.onepass import plan_checkout
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration


def test_check_passes_on_the_examples_repo(tools, tmp_path, capsys):
    report = tmp_path / "junit.xml"
    assert main(["check", str(EXAMPLES), "--junit", str(report)]) == 0
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite.get("failures") == "0" and int(suite.get("tests")) >= 7


def test_check_fails_with_junit_for_a_malformed_gate(tools, make_repo, tmp_path, capsys):
    root = make_repo({
        "apps/a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        "gates/bad.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: b}\n"
                          "spec: {bundles: [a], reason: r, actoin: hold}\n",
        "gates/orphan.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                             "metadata: {name: orphan}\nspec: {bundles: [nope], reason: r}\n",
    })
    report = tmp_path / "junit.xml"
    assert main(["check", str(root), "--junit", str(report), "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    suite = ET.parse(report).getroot().find("testsuite")
    failures = {case.get("name"): [f.get("message") for f in case.findall("failure")]
                for case in suite.findall("testcase")}
    assert failures["apps/a"] == []
    assert "spec.actoin" in failures["gates/bad.yaml"][0]
    assert "gates/bad.yaml:4" in failures["gates/bad.yaml"][0]
    assert "matches no bundle" in failures["gates/orphan.yaml"][0]


def junit_cases(report) -> dict[tuple[str, str], ET.Element]:
    suite = ET.parse(report).getroot().find("testsuite")
    return {(case.get("classname"), case.get("name")): case
            for case in suite.findall("testcase")}


def test_junit_has_a_case_per_source_bundle_and_gate_with_time_and_type(tools, make_repo,
                                                                        tmp_path):
    root = make_repo({
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "apps/a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        "apps/b/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        "gates/hold-a.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                             "metadata: {name: hold-a}\nspec: {bundles: [apps-a], reason: r}\n",
        "gates/bad.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: b}\n"
                          "spec: {bundles: [apps-b], reason: r, actoin: hold}\n",
    })
    report = tmp_path / "junit.xml"
    assert main(["check", str(root), "--junit", str(report)]) == 1
    cases = junit_cases(report)
    assert set(cases) == {("source.raw", "apps/a"), ("source.raw", "apps/b"),
                          ("bundle", "apps-a"), ("bundle", "apps-b"),
                          ("gate", "gates/hold-a.yaml"), ("gate", "gates/bad.yaml")}
    for case in cases.values():
        assert float(case.get("time")) >= 0.0
    bad = cases[("gate", "gates/bad.yaml")].findall("failure")
    assert len(bad) == 1 and bad[0].get("type") == "InvalidGate"
    assert not (bad[0].text or "").strip()  # the message once, not again as text
    held = cases[("bundle", "apps-a")]
    assert held.findall("failure") == []
    assert "held" in held.find("system-out").text and "gates/hold-a.yaml" in held.find(
        "system-out").text


def test_a_broken_bundle_yaml_does_not_fail_the_gates_meant_for_it(tools, make_repo,
                                                                    tmp_path):
    root = make_repo({
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "apps/a/bundle.yaml": "name: [not, a, name]\n",
        "apps/p/bundle.yaml": "name: payments\nlabels: [broken]\n",
        "apps/p/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\n",
        "gates/hold-payments.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: "
                                    "{name: hold-payments}\nspec: {bundles: [payments], "
                                    "reason: r}\n",
        "apps/a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        "apps/b/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        "gates/hold-a.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                             "metadata: {name: hold-a}\nspec: {bundles: [apps-a], reason: r}\n",
    })
    report = tmp_path / "junit.xml"
    assert main(["check", str(root), "--junit", str(report)]) == 1
    cases = junit_cases(report)
    failed = {key: [f.get("message") for f in case.findall("failure")]
              for key, case in cases.items() if case.findall("failure")}
    assert set(failed) == {("source.raw", "apps/a"), ("bundle", "apps-a"),
                           ("source.raw", "apps/p"), ("bundle", "apps-p")}
    assert "a source failed to render" in cases[("gate", "gates/hold-payments.yaml")].find(
        "system-out").text
    assert failed[("source.raw", "apps/a")] == [
        "apps/a/bundle.yaml:1: name must be a non-empty string"]
    assert failed[("bundle", "apps-a")] == ["not planned: its source apps/a failed (see that "
                                            "case)"]


def test_a_malformed_gate_holds_every_bundle_in_plan(tools, make_repo, capsys):
    root = make_repo({
        "apps/a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        "apps/b/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        "gates/bad.yaml": "this is: [not closed\n",
    })
    assert main(["plan", str(root), "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {b["verdict"] for b in doc["bundles"]} == {"held"}
    assert doc["errors"][0]["file"] == "gates/bad.yaml"


def test_pause_labels_from_helm_values_kustomize_labels_and_raw_files(tools, make_repo):
    root = make_repo({
        "chart/Chart.yaml": "apiVersion: v2\nname: chart\nversion: 0.1.0\n",
        "chart/values.yaml": "extraLabels: {}\n",
        "chart/bundle.yaml": "values: {extraLabels: {gitgate.io/paused: 'true'}}\n",
        "chart/templates/cm.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: chart
              labels: {{ toYaml .Values.extraLabels | nindent 4 }}
        """,
        "kust/kustomization.yaml": "resources: [cm.yaml]\n"
                                   "commonLabels: {work.karmada.io/paused: 'true'}\n",
        "kust/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kust}\n",
        "raw/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\n"
                       "  labels: {gitgate.io/paused: 'true'}\n",
        "open/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: open}\n",
    })
    plan = plan_checkout(root, tools, datetime.now(UTC)).plan
    verdicts = {b.bundle.name: b.verdict for b in plan.bundles}
    assert {n: str(v.verdict) for n, v in verdicts.items()} == {
        "chart": "held", "kust": "held", "raw": "held", "open": "apply"}
    labels = {n: v.reasons[0].gate for n, v in verdicts.items() if v.reasons}
    assert labels == {"chart": "gitgate.io/paused", "kust": "work.karmada.io/paused",
                      "raw": "gitgate.io/paused"}
    assert all(v.reasons[0].kind is ReasonKind.LABEL for n, v in verdicts.items() if v.reasons)


def test_examples_plan_shows_a_held_bundle_and_policies(tools, capsys):
    main(["plan", str(EXAMPLES), "-o", "json", "--at", "2026-11-18T12:00:00Z"])
    doc = json.loads(capsys.readouterr().out)
    bundles = {b["name"]: b for b in doc["bundles"]}
    assert bundles["podinfo"]["verdict"] == "held"
    assert bundles["podinfo"]["reasons"][0]["file"] == "gates/podinfo-incident.yaml"
    assert bundles["shop/payment"]["verdict"] == "suspended"
    suspension = bundles["shop/payment"]["policies"][0]["spec"]["suspension"]
    assert suspension == {"dispatchingOnClusters": {"clusterNames": ["member2"]}}
    assert bundles["guestbook"]["verdict"] == "apply"
    assert bundles["guestbook"]["nextChange"] == "2026-11-20T17:00:00Z"
    assert len(bundles["guestbook"]["digest"]) == 64
    assert {o["kind"] for o in bundles["guestbook"]["objects"]} == {
        "ConfigMap", "Deployment", "Service"}


def test_an_empty_folder_or_a_code_project_warns(tools, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["plan", str(empty)]) == 0
    err = capsys.readouterr().err
    assert f"no bundles found in {empty}" in err and "has no gitgate.yaml" in err
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    main(["plan", str(project)])
    assert "looks like a code project" in capsys.readouterr().err
    main(["plan", str(EXAMPLES)])
    assert "warning" not in capsys.readouterr().err


def test_check_fails_a_bundle_that_fails_after_rendering(tools, make_repo, capsys):
    """A propagation policy taking over another bundle rendered cleanly, so `check` reported
    its bundle `ok` with the failure tucked into a note; CI passed what every pass refuses."""
    root = make_repo({
        "gitgate.yaml": "paths: [apps]\n",
        "apps/a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n",
        "apps/b/pp.yaml": "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
                          "metadata: {name: grab, namespace: x}\nspec:\n  resourceSelectors:\n"
                          "  - {apiVersion: v1, kind: ConfigMap}\n  placement: {}\n"})
    assert main(["check", str(root), "-o", "json"]) == 1
    failed = {c["name"]: c["failures"] for c in json.loads(capsys.readouterr().out)["cases"]
              if c["failures"]}
    assert [f["type"] for f in failed["apps-b"]] == ["PolicyTakeover"]
