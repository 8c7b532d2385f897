"""Every JSON document gitgate prints carries apiVersion and kind and matches the JSON Schema
in docs/schema, from real commands over the example repo and the emulator."""

from __future__ import annotations

import json

import pytest

from gitgate.cli import main
from tests.conftest import EXAMPLES
from tests.support.looping import Upstream, reconciler, served_status
from tests.support.schemas import validate

pytestmark = pytest.mark.integration



def printed(capsys, *argv: str) -> dict:
    capsys.readouterr()
    main(list(argv))
    return json.loads(capsys.readouterr().out)


def test_offline_documents(tools, capsys):
    validate(printed(capsys, "plan", str(EXAMPLES), "-o", "json"), "Plan")
    per_cluster = printed(capsys, "plan", str(EXAMPLES), "-o", "json", "--cluster", "member2")
    validate(per_cluster, "Plan")
    assert {b["name"] for b in per_cluster["cluster"]["bundles"]} == {"podinfo", "shop/carts"}
    validate(printed(capsys, "gates", str(EXAMPLES), "-o", "json"), "GateList")
    validate(printed(capsys, "check", str(EXAMPLES), "-o", "json"), "CheckReport")


def test_documents_against_the_api(kube, tools, tmp_path, capsys):
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    upstream = Upstream(tmp_path, kube)
    applied = printed(capsys, "apply", str(upstream.root), *flags, "-o", "json")
    validate(applied, "ApplyResult")
    validate(printed(capsys, "status", *flags, "-o", "json"), "Status")
    plan = printed(capsys, "plan", str(upstream.root), *flags, "-o", "json")
    validate(plan, "Plan")
    loop = reconciler(upstream, kube, tools, tmp_path)
    loop.tick()
    validate(json.loads(json.dumps(served_status(loop))), "LoopStatus")


def test_a_wrong_document_fails_the_schema():
    with pytest.raises(AssertionError):
        validate({"apiVersion": "gitgate.io/v1alpha1", "kind": "Status",
                  "bundles": [{"name": "x"}]}, "Status")


REF_KEYS = {"group", "kind", "namespace", "name"}


def refs_in(value, key: str = ""):
    """Every object reference a document holds under a key that names objects."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from refs_in(v, k)
    elif isinstance(value, list):
        for item in value:
            if key in REF_LISTS:
                yield item
            else:
                yield from refs_in(item, key)


REF_LISTS = {"objects", "heldObjects", "hooks", "templates", "onFail", "applied", "pruned",
             "kept", "notOwned", "pruneFailed"}


def test_one_shape_for_object_references(tools, capsys):
    """Issue 61: `plan -o json` gave `objects` as references but `heldObjects` as display
    strings. Every reference is one shape: group, kind, namespace, name (and apiVersion where
    the document knows it), `heldObjects` exactly as `objects`."""
    plan = printed(capsys, "plan", str(EXAMPLES), "-o", "json", "--at", "2026-11-28T12:00:00Z")
    validate(plan, "Plan")
    overrides = next(b for b in plan["bundles"] if b["name"] == "platform-overrides")
    assert overrides["heldObjects"] == [{
        "apiVersion": "policy.karmada.io/v1alpha1", "group": "policy.karmada.io",
        "kind": "OverridePolicy", "namespace": "shop", "name": "carts-member2-memory"}]
    assert overrides["heldObjects"][0] in overrides["objects"]
    refs = list(refs_in(plan["bundles"]))
    assert refs and all(isinstance(r, dict) and set(r) >= REF_KEYS for r in refs), refs
