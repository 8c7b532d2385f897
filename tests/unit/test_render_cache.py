from gitgate.render.cache import cache_key
from gitgate.source.discover import discover
from tests.conftest import memory_tree

FILES = {
    "shop/bundle.yaml": "dir: overlays/prod\n",
    "shop/base/kustomization.yaml": "resources: [cm.yaml]\n",
    "shop/base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    "shop/overlays/prod/kustomization.yaml": "resources: [../../base]\n",
    "raw/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\n",
    "chart/Chart.yaml": "name: c\nversion: 1.0.0\n",
    "chart/templates/x.yaml": "kind: ConfigMap\n",
    "elsewhere/z.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z}\n",
}


def keys(files, escaping=()):
    tree = memory_tree(files, escaping)
    return {s.path: cache_key(s, tree, None) for s in discover(tree).sources}


def test_keys_are_stable_and_change_only_with_their_inputs():
    before = keys(FILES)
    assert before == keys(dict(FILES))
    base_changed = keys({**FILES, "shop/base/cm.yaml": FILES["shop/base/cm.yaml"] + "data: {}\n"})
    assert base_changed["shop"] != before["shop"]  # a base loaded through the overlay
    assert {k: v for k, v in base_changed.items() if k != "shop"} == {
        k: v for k, v in before.items() if k != "shop"}
    template = keys({**FILES, "chart/templates/x.yaml": "kind: Secret\n"})
    assert template["chart"] != before["chart"] and template["raw"] == before["raw"]
    paused = keys({**FILES, "raw/PAUSE": "INC-1"})
    assert paused["raw"] != before["raw"]
    option = keys({**FILES, "chart/bundle.yaml": "namespace: other\n"})
    assert option["chart"] != before["chart"]
    linked = keys(FILES, escaping=("chart/templates/evil.yaml",))
    assert linked["chart"] != before["chart"]


def test_an_unsafe_kustomization_has_no_key():
    bad = {**FILES, "shop/overlays/prod/kustomization.yaml": "resources: [https://x.io/a.yaml]\n"}
    assert keys(bad)["shop"] is None
