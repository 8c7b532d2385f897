import pytest

from gitgate.model import BUNDLE_LABEL, bundle_from_label, bundle_label_value
from gitgate.render import post


def cm(name, **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


@pytest.mark.parametrize("document, reason", [
    (["a", "list"], "expected a mapping"),
    ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "apiVersion"),
    ({"apiVersion": "v1", "metadata": {"name": "x"}}, "kind"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, "metadata.name"),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, "metadata.name"),
])
def test_invalid_documents_say_what_is_missing(document, reason):
    assert reason in post.invalid_reason(document)


def test_valid_object_has_no_reason():
    assert post.invalid_reason(cm("x")) is None


def test_list_kinds_are_expanded():
    listing = {"apiVersion": "v1", "kind": "List", "items": [cm("a"), cm("b")]}
    assert post.expand_lists([listing, cm("c")]) == [cm("a"), cm("b"), cm("c")]


def test_default_namespace_uses_builtin_table_and_repo_crds():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Widget"}}}
    crd_ns = {**crd, "metadata": {"name": "gadgets.example.com"},
              "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Gadget"}}}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    unknown = {"apiVersion": "other.io/v1", "kind": "Thing", "metadata": {"name": "t"}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r", "namespace": "stray"}}
    scopes = post.crd_scopes([crd, crd_ns])
    out, warnings = post.default_namespace(
        [cm("a"), cm("b", namespace="kept"), widget, gadget, unknown, namespace, role], "ns",
        scopes)
    namespaces = [o["metadata"].get("namespace") for o in out]
    assert namespaces == ["ns", "kept", None, "ns", "ns", None, None]
    assert len(warnings) == 1 and "Thing" in warnings[0]


def test_bundle_label_values_are_valid_label_values():
    assert bundle_label_value("shop/carts") == "shop_carts"
    assert bundle_from_label("shop_carts") == "shop/carts"
    long = bundle_label_value("a" * 40 + "/" + "b" * 40)
    assert len(long) <= 63 and long[-9] == "-"


def test_bundle_label_is_added_without_touching_the_input():
    original = cm("a", labels={"app": "x"})
    labelled = post.with_bundle_label(original, "shop/carts")
    assert labelled["metadata"]["labels"] == {"app": "x", BUNDLE_LABEL: "shop_carts"}
    assert original["metadata"]["labels"] == {"app": "x"}


def _cm(name: str, labels: dict[str, str] | None = None) -> dict:
    meta: dict = {"name": name, "namespace": "shop"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def test_an_object_labelled_already_is_handed_back_and_the_rest_get_new_metadata():
    plain, labelled = _cm("a", {"team": "x"}), _cm("b", {BUNDLE_LABEL: "shop_carts"})
    out = post.with_bundle_label(plain, "shop/carts")
    assert out["metadata"]["labels"] == {"team": "x", BUNDLE_LABEL: "shop_carts"}
    assert plain["metadata"]["labels"] == {"team": "x"}  # never changed in place
    assert out["data"] is plain["data"]
    assert post.with_bundle_label(labelled, "shop/carts") is labelled


def test_a_single_bundle_source_is_labelled_as_grouping_would_label_it():
    objects = [_cm("a"), _cm("b", {BUNDLE_LABEL: "shop_carts_web"})]
    early = post.labelled_early(objects, "shop/carts", split=False)
    assert early[0] == post.with_bundle_label(objects[0], "shop/carts")
    assert early[1] is objects[1]  # its own label moves it: grouping decides
    assert post.with_bundle_label(early[0], "shop/carts") is early[0]


def test_split_sources_and_names_a_label_shortens_are_left_to_grouping():
    objects = [_cm("a")]
    assert post.labelled_early(objects, "shop", split=True)[0] is objects[0]
    long_name = "team/" + "x" * 70
    assert post.labelled_early(objects, long_name, split=False)[0] is objects[0]
