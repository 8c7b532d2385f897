"""Issue 28, item 12: the conventions users reach for. `-o yaml` wherever `-o json` exists, a
bundle argument on `status`, `--bundle` on `gates`, completion of bundle and gate names, and a
CLUSTERS column in `plan`. The real CLI, in subprocesses."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from ruamel.yaml import YAML

from tests.conftest import EXAMPLES, REPO_ROOT, write_files
from tests.support.hostile import gitgate

pytestmark = pytest.mark.integration


def yaml_of(text: str) -> object:
    return YAML(typ="safe").load(text)


def same_document(json_text: str, yaml_text: str) -> None:
    as_json, as_yaml = json.loads(json_text), yaml_of(yaml_text)
    for doc in (as_json, as_yaml):
        doc.pop("at", None)  # plan and gates stamp the moment they ran
        for case in doc.get("cases", []):
            case.pop("seconds")  # check times each case
    assert as_json == as_yaml


# a moment the example's weekend freeze (Friday 18:00 Berlin, 62 h) is not in: what the
# examples show does not hang on the clock the suite runs at
WEDNESDAY = "2026-11-25T12:00:00Z"


@pytest.mark.parametrize("argv", [("plan", str(EXAMPLES), "--at", WEDNESDAY),
                                  ("gates", str(EXAMPLES), "--at", WEDNESDAY),
                                  ("check", str(EXAMPLES)), ("version",)])
def test_yaml_is_offered_wherever_json_is_and_says_the_same(argv):
    as_json = gitgate(*argv, "-o", "json")
    as_yaml = gitgate(*argv, "-o", "yaml")
    assert as_yaml.returncode == as_json.returncode, as_yaml.stderr
    same_document(as_json.stdout, as_yaml.stdout)


def test_status_and_apply_in_yaml_and_status_of_some_bundles(tmp_path, kube):
    ns = kube.ns("conv")
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: " + ns + "}}\n"
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n",
        "ns/bundle.yaml": f"name: {kube.run_id}-ns\n",
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "web/bundle.yaml": f"name: {kube.run_id}-web\ndependsOn: [{kube.run_id}-ns]\n",
        "web/cm.yaml": cm.format(n="web"),
        "db/bundle.yaml": f"name: {kube.run_id}-db\ndependsOn: [{kube.run_id}-ns]\n",
        "db/cm.yaml": cm.format(n="db"),
        # a held bundle's row carries a reason (an enum inside gitgate) that YAML once
        # could not write
        "held/bundle.yaml": f"name: {kube.run_id}-held\ndependsOn: [{kube.run_id}-ns]\n",
        "held/cm.yaml": cm.format(n="held"),
        "held/PAUSE": "debugging a reconcile fight\n"})
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    applied = gitgate("apply", str(root), *flags, "-o", "yaml")
    assert applied.returncode == 0, applied.stderr
    rows = {b["name"]: b for b in yaml_of(applied.stdout)["bundles"]}
    assert set(rows) == {f"{kube.run_id}-{n}" for n in ("ns", "web", "db", "held")}
    held = rows[f"{kube.run_id}-held"]
    assert (held["verdict"], held["reason"]) == ("held", "Held")
    assert "debugging a reconcile fight" in held["message"]
    same_document(gitgate("apply", str(root), *flags, "--dry-run", "-o", "json").stdout,
                  gitgate("apply", str(root), *flags, "--dry-run", "-o", "yaml").stdout)
    same_document(gitgate("status", *flags, "-o", "json").stdout,
                  gitgate("status", *flags, "-o", "yaml").stdout)

    some = gitgate("status", f"{kube.run_id}-w*", *flags, "-o", "json")
    assert [b["name"] for b in json.loads(some.stdout)["bundles"]] == [f"{kube.run_id}-web"]
    rows = gitgate("status", f"{kube.run_id}-d*", *flags).stdout.splitlines()[1:]
    assert [r.split()[0] for r in rows] == [f"{kube.run_id}-db"]
    typo = gitgate("status", f"{kube.run_id}-wbe", *flags)
    assert typo.returncode == 2 and f"closest: {kube.run_id}-web" in typo.stderr


def test_gates_of_some_bundles():
    shown = json.loads(gitgate("gates", str(EXAMPLES), "--bundle", "podinfo",
                               "-o", "json").stdout)
    assert [g["name"] for g in shown["gates"]] == ["podinfo-incident"]
    shop = json.loads(gitgate("gates", str(EXAMPLES), "--bundle", "shop/pay*",
                              "-o", "json").stdout)
    assert {g["name"] for g in shop["gates"]} == {"shop-payment-migration", "weekend-freeze"}
    typo = gitgate("gates", str(EXAMPLES), "--bundle", "podinf")
    assert typo.returncode == 2 and "closest: podinfo" in typo.stderr


def test_plan_says_where_each_bundle_goes():
    plan = gitgate("plan", str(EXAMPLES), "--at", WEDNESDAY)
    head, *rows = plan.stdout.splitlines()[1:16]
    assert "CLUSTERS" in head.split()
    cells = {r.split()[0]: r for r in rows}
    assert "member1,member2 " in cells["guestbook"]
    assert "member1,member2 (member2 suspended)" in cells["shop/payment"]
    assert "all members" in cells["namespaces"]  # Karmada sends Namespaces itself
    assert "control plane" in cells["platform-overrides"]  # OverridePolicies only
    doc = json.loads(gitgate("plan", str(EXAMPLES), "--at", WEDNESDAY, "-o", "json").stdout)
    assert {b["name"]: b["clusters"] for b in doc["bundles"]}["podinfo"] == "member1,member2"


def complete(line: str, cwd) -> list[str]:
    """What the shell's Tab offers for `line` (argcomplete's protocol, as the script from
    `gitgate completion bash` drives it)."""
    read, write = os.pipe()
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_SUPPRESS_SPACE": "1",
           "PYTHONPATH": str(REPO_ROOT)}

    # fd 8: the words offered; fd 9: argcomplete's debug output (as the shell script wires)
    script = f"exec {shlex.quote(sys.executable)} -m gitgate.cli 8>&{write} 9>/dev/null"
    done = subprocess.run(["bash", "-c", script], env=env, cwd=cwd, pass_fds=(write,),
                          capture_output=True, text=True, timeout=60)
    os.close(write)
    with os.fdopen(read) as offered:
        words = offered.read().split("\n")
    assert done.returncode == 0, done.stderr
    return sorted(w.strip() for w in words if w.strip())


def test_bundle_and_gate_names_complete():
    assert complete("gitgate resume sh", EXAMPLES) == ["shop", "shop-payment-migration"]
    assert complete("gitgate pause po", EXAMPLES) == ["podinfo"]
    assert complete(f"gitgate plan {EXAMPLES} --bundle gu", REPO_ROOT) == ["guestbook"]
    assert complete("gitgate status pl", EXAMPLES) == ["platform-overrides"]
