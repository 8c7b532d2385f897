"""The JSON Schemas of the files people write (gitgate.yaml, bundle.yaml, gate files) agree
with gitgate's own parsers (issue 28, item 12): the same keys at every level, the examples
valid, and what the parsers refuse refused by the schemas too (editors warn before CI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from gitgate.errors import GitgateError
from gitgate.gate import spec as gate_spec
from gitgate.gate.spec import gate_from_data
from gitgate.source import config, rolloutconfig, tenantconfig
from gitgate.source.config import RepoConfig, parse_bundle_options, parse_repo_config
from gitgate.yamlio import load_one
from tests.conftest import EXAMPLES

SCHEMAS = Path(__file__).resolve().parents[2] / "docs/schema"
FILES = {"gitgate.yaml": "gitgate-config.json", "bundle.yaml": "bundle.json",
         "gate": "gate.json"}


def _registry() -> Registry:
    resources = []
    for file in SCHEMAS.glob("*.json"):
        schema = json.loads(file.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
        resources.append((file.name, Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def validator(kind: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / FILES[kind]).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=_registry())


def keys(schema: dict, *path: str) -> set[str]:
    node = schema
    for part in path:
        node = node[part]
    return set(node["properties"])


def test_the_schemas_name_the_keys_the_parsers_accept():
    repo = json.loads((SCHEMAS / "gitgate-config.json").read_text())
    bundle = json.loads((SCHEMAS / "bundle.json").read_text())
    gate = json.loads((SCHEMAS / "gate.json").read_text())
    assert keys(repo) == config._REPO_KEYS
    assert keys(repo, "properties", "defaults") == config._DEFAULT_KEYS
    assert keys(repo, "properties", "verify") == config._VERIFY_KEYS
    assert keys(repo, "$defs", "rollout") == rolloutconfig._ROLLOUT_KEYS
    assert set(repo["properties"]["tenants"]["items"]["properties"]) == tenantconfig._TENANT_KEYS
    assert keys(bundle) == config._BUNDLE_KEYS
    item = bundle["properties"]["clusters"]["items"]
    assert set(item["properties"]) == rolloutconfig._CUSTOMIZATION_KEYS
    patch = item["properties"]["patches"]["items"]
    assert set(patch["properties"]) == rolloutconfig._PATCH_KEYS
    assert keys(patch, "properties", "target") == rolloutconfig._TARGET_KEYS
    assert keys(gate) == gate_spec._TOP_KEYS
    assert keys(gate, "properties", "metadata") == gate_spec._META_KEYS
    assert keys(gate, "properties", "spec") == gate_spec._SPEC_KEYS
    spec = gate["properties"]["spec"]["properties"]
    assert set(spec["windows"]["items"]["properties"]) == gate_spec._WINDOW_KEYS
    assert set(spec["reasons"]["items"]["properties"]) == gate_spec._REASON_KEYS
    assert keys(gate, "$defs", "approval") == gate_spec._APPROVE_KEYS


def test_the_example_repo_is_valid():
    checked = 0
    for file in EXAMPLES.rglob("*.yaml"):
        kind = ("gitgate.yaml" if file.name == "gitgate.yaml" else "bundle.yaml"
                if file.name == "bundle.yaml" else "gate" if file.parent.name == "gates"
                else None)
        if kind is None:
            continue
        errors = list(validator(kind).iter_errors(load_one(file.read_text())))
        assert errors == [], (file, [e.message for e in errors])
        checked += 1
    assert checked >= 6


GATE = {"apiVersion": "gitgate.io/v1alpha1", "kind": "Gate", "metadata": {"name": "g"}}


def _parses(kind: str, data: object) -> bool:
    try:
        if kind == "gitgate.yaml":
            parse_repo_config(json.dumps(data))
        elif kind == "bundle.yaml":
            parse_bundle_options(json.dumps(data), "bundle.yaml", RepoConfig())
        else:
            gate_from_data(data, "gates/g.yaml")
    except GitgateError:
        return False
    return True


@pytest.mark.parametrize(("kind", "data"), [
    ("gitgate.yaml", {"pahts": ["apps"]}),
    ("gitgate.yaml", {"defaults": {"nmespace": "x"}}),
    ("gitgate.yaml", {"defaults": {"rollout": {"waves": []}}}),
    ("gitgate.yaml", {"untenanted": "deny"}),
    ("gitgate.yaml", {"tenants": [{"name": "a", "paths": ["a/**"], "namspaces": ["a"]}]}),
    ("gitgate.yaml", {"tenants": [{"name": "a", "paths": []}]}),
    ("gitgate.yaml", {"tenants": [{"name": "platform", "paths": ["p/**"]}]}),
    ("gitgate.yaml", {"tenants": [{"name": "a", "paths": ["a/**"], "clusterScoped": "yes"}]}),
    ("gitgate.yaml", {"verify": {"commits": True}}),
    ("gitgate.yaml", {"verify": {"allowedSigners": "/etc/allowed_signers"}}),
    ("gitgate.yaml", {"verify": {"allowedSigners": "../keys"}}),
    ("gitgate.yaml", {"verify": {"allowedSigners": "k", "commit": False}}),
    ("gitgate.yaml", {"gates": {"signers": ["alice@example.com"]}}),
    ("gitgate.yaml", {"verify": {"allowedSigners": "k"}, "gates": {"signers": []}}),
    ("gitgate.yaml", {"tenants": [{"name": "a", "paths": ["a/**"],
                                   "clusters": {"labelSelector": {}}}]}),
    ("gitgate.yaml", {"tenants": [{"name": "a", "paths": ["a/**"],
                                   "clusters": {"names": ["member1"]}}]}),
    ("gitgate.yaml", {"tenants": [{"name": "a", "paths": ["a/**"],
                                   "serviceAccount": {"namespace": "t"}}]}),
    ("bundle.yaml", {"dri": "overlays/prod"}),
    ("bundle.yaml", {"name": "Not_Valid"}),
    ("bundle.yaml", {"split": "apps"}),
    ("bundle.yaml", {"rollout": {"waves": [{"clusters": ["a"]}], "onFailure": "retry"}}),
    ("bundle.yaml", {"rollout": {"waves": [{"clusters": ["a"]}], "bake": "soon"}}),
    ("bundle.yaml", {"clusters": [{"clusters": ["a"]}]}),
    ("bundle.yaml", {"clusters": [{"clusters": ["a"], "labelSelector": {"matchLabels": {}},
                                   "values": {}}]}),
    ("bundle.yaml", {"rollout": {"waves": [{"labelSelector": {}}]}}),
    ("gate", {**GATE, "spec": {"bundles": ["a"]}}),
    ("gate", {**GATE, "spec": {"reason": "x"}}),
    ("gate", {**GATE, "spec": {"bundles": ["a"], "reason": "x", "action": "stop"}}),
    ("gate", {**GATE, "spec": {"bundles": ["a"], "reason": "x", "clusters": ["m"]}}),
    ("gate", {**GATE, "spec": {"bundles": ["a"], "reason": "x", "until": "tomorrow"}}),
    ("gate", {**GATE, "spec": {"bundles": ["a"], "reason": "x",
                               "windows": [{"cron": "0 1 * * *"}]}}),
    ("gate", {**GATE, "spec": {"bundles": ["a"], "reason": "x",
                               "approve": {"bundle": "a", "digest": "abc"}}}),
    ("gate", {**GATE, "spec": {"bundles": ["a"], "reason": "x", "reasons": [{"by": "me"}]}}),
    ("gate", {**GATE, "metadata": {"name": "Upper"},
              "spec": {"bundles": ["a"], "reason": "x"}}),
])
def test_what_the_parsers_refuse_the_schemas_refuse(kind, data):
    assert not _parses(kind, data)
    assert list(validator(kind).iter_errors(data)), data


@pytest.mark.parametrize(("kind", "data"), [
    ("gitgate.yaml", None),
    ("gitgate.yaml", {"untenanted": "refuse", "tenants": [
        {"name": "payments", "paths": ["apps/payments/**"], "namespaces": ["payments-*"],
         "clusters": ["member1"], "kinds": {"deny": ["Secret"]}, "clusterScoped": False,
         "serviceAccount": {"namespace": "gitgate-tenants", "name": "payments"}}]}),
    ("gitgate.yaml", {"tenants": [{"name": "ops", "paths": ["ops/**"], "clusters": {
        "labelSelector": {"matchExpressions": [{"key": "team", "operator": "In",
                                                "values": ["ops"]}]}}}]}),
    ("gitgate.yaml", {"verify": {"allowedSigners": ".gitgate/allowed_signers",
                                 "allowedGpgKeys": ".gitgate/keys.asc", "commits": False},
                      "gates": {"signers": ["alice@example.com", "0x1234567890ABCDEF"]}}),
    ("bundle.yaml", {"placement": "none"}),
    ("bundle.yaml", {"rollout": {"waves": [{"labelSelector": {"matchExpressions": [
        {"key": "region", "operator": "In", "values": ["eu"]}]}}], "bake": "1h30m"}}),
    ("bundle.yaml", {"clusters": [{"labelSelector": {"matchLabels": {"env": "prod"}},
                                   "patches": [{"patch": {"spec": {"replicas": 3}}}]}]}),
    ("gate", {**GATE, "spec": {"selector": {"matchLabels": {"tier": "db"}}, "reason": "x",
                               "action": "suspend", "clusters": "member2",
                               "until": "2026-01-01T00:00:00Z",
                               "reasons": [{"reason": "y", "by": "Bob <b@x>",
                                            "at": "2026-01-01T00:00:00Z"}]}}),
])
def test_what_the_parsers_accept_the_schemas_accept(kind, data):
    assert _parses(kind, data)
    assert list(validator(kind).iter_errors(data)) == []
