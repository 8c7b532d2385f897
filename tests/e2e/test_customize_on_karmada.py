"""Per-cluster customization on a real Karmada: a Helm chart with values for member2 and raw
YAML with patches for member2, compiled into OverridePolicies; each member runs its own
values, and `render --cluster` shows what the member runs, field for field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.karmada import Karmada, Run, gitgate, wait_for
from tests.support.karmadarun import with_namespaces
from tests.support.manifests import CUSTOMIZED_WEB, api_chart, web_patches

pytestmark = pytest.mark.e2e


def repo_files(run: Run) -> dict[str, str]:
    ns = run.ns("cz")
    needs = f"dependsOn: [{run.bundle('ns')}]\n"
    return {
        **with_namespaces(run, "cz"),
        **api_chart("api", "1.0"),
        "api/bundle.yaml": f"name: {run.bundle('api')}\nnamespace: {ns}\n{needs}"
                           "clusters:\n  - clusters: [member2]\n"
                           "    values: {replicas: 4, image: {tag: '2.0'}}\n",
        "web/app.yaml": CUSTOMIZED_WEB,
        "web/bundle.yaml": f"name: {run.bundle('web')}\nnamespace: {ns}\n{needs}"
                           + web_patches(3),
    }


def contained(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Every field `expected` sets, with the same value in `actual` (which may hold more:
    defaults, Karmada's labels)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: {actual!r} is not a mapping"]
        return [d for k, v in expected.items() for d in contained(v, actual.get(k), f"{where}.{k}")]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: {actual!r} != {expected!r}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual, strict=True))
                for d in contained(e, a, f"{where}[{i}]")]
    return [] if expected == actual else [f"{where}: {actual!r} != {expected!r}"]


def member_object(karmada: Karmada, member: str, obj: dict) -> dict | None:
    meta = obj["metadata"]
    return karmada.members[member].get(obj["apiVersion"], obj["kind"], meta["namespace"],
                                       meta["name"])


def test_each_member_runs_its_own_values_and_render_cluster_matches_it(run, karmada):
    ns = run.ns("cz")
    run.repo.commit(repo_files(run), "api and web, customized for member2")
    document = run.apply()
    assert all(not b["failed"] for b in document["bundles"]), document
    wait_for(lambda: karmada.image("member2", ns, "api") == "nginx:2.0", message="api values")
    wait_for(lambda: (karmada.configmap("member2", ns, "web-config") or {}).get("mode")
             == "blue", message="the strategic-merge patch reaches member2")
    assert karmada.image("member1", ns, "api") == "nginx:1.0"
    assert karmada.image("karmada", ns, "api") == "nginx:1.0"  # the template stays default
    assert karmada.configmap("member1", ns, "web-config") == {"mode": "green", "size": "1"}

    for member in ("member1", "member2"):
        done = gitgate("render", str(run.repo.root), "--cluster", member, "-o", "json")
        assert done.returncode == 0, done.stderr
        shown = [o for b in json.loads(done.stdout)["bundles"]
                 if b["name"] in (run.bundle("api"), run.bundle("web")) for o in b["objects"]]
        assert len(shown) == 3
        for obj in shown:
            live = wait_for(lambda o=obj, m=member: member_object(karmada, m, o),
                            message=f"{obj['kind']} on {member}")
            differences = contained({k: v for k, v in obj.items() if k != "metadata"}, live)
            assert differences == [], (member, obj["kind"], differences)
    replicas = {m: karmada.members[m].get("apps/v1", "Deployment", ns, "web")["spec"]["replicas"]
                for m in ("member1", "member2")}
    assert replicas == {"member1": 2, "member2": 3}
