"""Monitoring that real tools accept (issue 30, item 3): the PrometheusRule's groups pass
`promtool check rules` and `promtool test rules` with synthetic series (each alert fires
when it should and stays quiet when it should not); every metric the rules and the Grafana
dashboard query is one gitgate exports, read from its live registry; the ServiceMonitor
finds the Service that deploy/ runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from gitgate.status.metrics import LoopMetrics

pytestmark = pytest.mark.integration
MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
DEPLOY = MONITORING.parent


def promtool() -> str:
    found = shutil.which("promtool") or str(Path(sys.executable).parent / "promtool")
    if not Path(found).exists():
        pytest.skip("promtool is not installed: `make setup` fetches it from Debian's "
                    "prometheus package (tools/install_promtool.py); without apt-get and "
                    "dpkg-deb, install that package yourself")
    return found


def rules(tmp_path: Path) -> Path:
    """The PrometheusRule's groups as the plain rule file promtool reads."""
    rule = YAML(typ="safe").load((MONITORING / "prometheusrule.yaml").read_text())
    path = tmp_path / "rules.yaml"
    YAML().dump({"groups": rule["spec"]["groups"]}, path)
    shutil.copy(MONITORING / "rules.test.yaml", tmp_path / "rules.test.yaml")
    return path


def test_the_alert_rules_pass_promtool_check_and_their_unit_tests(tmp_path):
    tool = promtool()
    checked = subprocess.run([tool, "check", "rules", str(rules(tmp_path))],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 5 rules found" in checked.stdout
    tested = subprocess.run([tool, "test", "rules", "rules.test.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_a_rule_that_would_never_fire_fails_its_unit_test(tmp_path):
    """The unit tests bite: with the failing threshold raised, the expected alert is
    missing and promtool says so."""
    tool = promtool()
    path = rules(tmp_path)
    path.write_text(path.read_text().replace(">= 3", ">= 30"))
    tested = subprocess.run([tool, "test", "rules", "rules.test.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert tested.returncode != 0 and "GitgateBundleFailing" in tested.stdout + tested.stderr


def exported() -> set[str]:
    """Every series name gitgate's registry can expose (counters with `_total`, histograms
    with their `_bucket`, `_sum` and `_count`)."""
    names = set()
    for family in LoopMetrics(tool_versions={}).families():
        names.add(family.name)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        if family.type == "histogram":
            names |= {f"{family.name}_{s}" for s in ("bucket", "sum", "count")}
    return names


def queried() -> dict[str, set[str]]:
    rule = YAML(typ="safe").load((MONITORING / "prometheusrule.yaml").read_text())
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    expressions = {"rules": [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]],
                   "dashboard": [t["expr"] for p in dashboard["panels"]
                                 for t in p.get("targets", [])]}
    return {where: {name for expr in exprs for name in re.findall(r"\bgitgate_[a-z_]+", expr)}
            for where, exprs in expressions.items()}


def test_every_metric_the_rules_and_the_dashboard_query_is_exported():
    names = exported()
    for where, used in queried().items():
        assert used, where
        assert used <= names, f"{where} queries metrics gitgate does not export: " \
                              f"{sorted(used - names)}"


def test_the_service_monitor_finds_the_service_deploy_runs(tools):
    monitor = YAML(typ="safe").load((MONITORING / "servicemonitor.yaml").read_text())
    built = subprocess.run([*tools.kustomize, str(DEPLOY / "base")], capture_output=True,
                           text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    service = next(d for d in YAML(typ="safe").load_all(built.stdout)
                   if d and d["kind"] == "Service")
    labels = service["metadata"].get("labels") or {}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ports = {p["name"] for p in service["spec"]["ports"]}
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= ports
    whole = subprocess.run([*tools.kustomize, str(MONITORING)], capture_output=True,
                           text=True, timeout=120)
    assert whole.returncode == 0, whole.stderr
    kinds = [d["kind"] for d in YAML(typ="safe").load_all(whole.stdout) if d]
    assert sorted(kinds) == ["ConfigMap", "PrometheusRule", "ServiceMonitor"]
