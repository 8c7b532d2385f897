"""The memo that carries derived work from one pass to the next (plain data), and what a
second pass over an unchanged repo reuses (a real folder of raw YAML, no tools needed)."""

from datetime import UTC, datetime

from gitgate.memo import Memo, derive
from gitgate.passes.onepass import plan_rendered
from gitgate.render.cache import RenderCache
from gitgate.render.pipeline import render_repo
from tests.conftest import write_files

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


class Origin:
    """An object a value is derived from (compared by identity, as rendered sources are)."""


def counting():
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)
    return calls, compute


def test_a_value_is_computed_once_per_origin_and_inputs():
    memo, origin = Memo(), Origin()
    calls, compute = counting()
    assert memo.derive("stage", origin, ("a",), compute) == 1
    assert memo.derive("stage", origin, ("a",), compute) == 1
    assert memo.derive("stage", origin, ("b",), compute) == 2  # other inputs
    assert memo.derive("other", origin, ("a",), compute) == 3  # another stage
    assert memo.derive("stage", Origin(), ("a",), compute) == 4  # another object, same inputs
    assert len(calls) == 4 and memo.hits == 1


def test_what_a_pass_used_is_kept_for_the_next_and_the_rest_dropped():
    memo, kept, dropped = Memo(), Origin(), Origin()
    calls, compute = counting()
    memo.derive("s", kept, (), compute)
    memo.derive("s", dropped, (), compute)
    memo.next_pass()
    memo.derive("s", kept, (), compute)  # used again in this pass
    memo.next_pass()
    assert memo.derive("s", kept, (), compute) == 1  # still there
    assert memo.derive("s", dropped, (), compute) == 3  # dropped after a pass without it
    assert len(calls) == 3


def test_without_a_memo_every_call_computes():
    calls, compute = counting()
    derive(None, "s", Origin(), (), compute)
    derive(None, "s", Origin(), (), compute)
    assert len(calls) == 2


def configmap(name: str, value: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{v: {value}}}\n"


def test_a_second_pass_reuses_the_plans_of_unchanged_bundles_only(tmp_path):
    root = write_files(tmp_path / "repo", {
        "a/cm.yaml": configmap("a", "one"), "b/cm.yaml": configmap("b", "one"),
        "c/cm.yaml": configmap("c", "one")})
    cache = RenderCache()

    def plans():
        rendered = render_repo(root, None, cache=cache)
        return {b.bundle.name: b for b in plan_rendered(rendered, NOW, "r1").bundles}

    first = plans()
    second = plans()
    assert all(second[name] is first[name] for name in first)  # nothing derived again
    assert second["a"].written is first["a"].written  # nor hashed again
    (root / "b/cm.yaml").write_text(configmap("b", "two"))
    write_files(root, {"gates/c.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                       "metadata: {name: freeze-c}\nspec: {bundles: [c], reason: INC-1}\n"})
    third = plans()
    assert third["a"] is first["a"]
    assert third["b"] is not first["b"]  # its file changed
    assert third["b"].desired[0]["data"] == {"v": "two"}
    assert third["c"] is not first["c"] and third["c"].verdict.verdict == "held"  # a new gate
    assert third["c"].bundle is first["c"].bundle  # same objects: only the verdict is new


def test_placement_is_reused_while_the_scopes_of_the_kinds_a_source_renders_stay(tmp_path):
    root = write_files(tmp_path / "repo", {"a/cm.yaml": configmap("a", "one")})
    cache = RenderCache()

    def plans(scope_of=None):
        rendered = render_repo(root, None, cache=cache, scope_of=scope_of)
        return {b.bundle.name: b for b in plan_rendered(rendered, NOW, "r1").bundles}

    first = plans()  # scopes from the built-in table alone
    # the API server's discovery: ConfigMaps namespaced, as the table says, and a kind the
    # repo does not render
    served = {("v1", "ConfigMap"): True, ("example.io/v1", "Widget"): False}
    second = plans(lambda api_version, kind: served.get((api_version, kind)))
    assert second["a"] is first["a"]  # neither placed nor planned again
    third = plans(lambda api_version, kind: False)  # a ConfigMap now cluster-scoped
    assert third["a"] is not first["a"]
    assert "namespace" not in third["a"].desired[0]["metadata"]
    assert first["a"].desired[0]["metadata"]["namespace"] == "default"
