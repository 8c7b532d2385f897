import pytest

from gitgate.render.cache import cache_key
from gitgate.source.discover import discover
from gitgate.source.tree import RepoTree
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


class CountingFiles(frozenset):
    """A tree's file set that counts full walks over it."""

    walks = 0

    def __iter__(self):
        CountingFiles.walks += 1
        return super().__iter__()


def generated(sources: int) -> dict[str, str]:
    """Kustomize overlays over one shared base, raw folders and charts, a third each."""
    files = {"base/kustomization.yaml": "resources: [cm.yaml]\n",
             "base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}
    for i in range(sources):
        if i % 3 == 0:
            files[f"apps/k{i}/kustomization.yaml"] = "resources: [../../base]\nnamePrefix: k\n"
        elif i % 3 == 1:
            files[f"apps/r{i}/cm.yaml"] = ("apiVersion: v1\nkind: ConfigMap\nmetadata: "
                                           f"{{name: r{i}}}\n")
        else:
            files[f"apps/c{i}/Chart.yaml"] = f"name: c{i}\nversion: 1.0.0\n"
            files[f"apps/c{i}/templates/cm.yaml"] = "kind: ConfigMap\n"
    return files


@pytest.mark.parametrize("size", [30, 300])
def test_keying_every_source_walks_the_repo_once_and_reads_each_file_once(size):
    files = generated(size)
    reads: list[str] = []
    plain = memory_tree(files)
    tree = RepoTree(CountingFiles(plain.files), plain.escaping_links, plain.read,
                    read_bytes=lambda rel: reads.append(rel) or files[rel].encode())
    sources = discover(tree).sources
    assert len(sources) == size + 1  # and the base, a kustomization of its own
    CountingFiles.walks = 0
    computed = {s.path: cache_key(s, tree, None) for s in sources}
    assert None not in computed.values()
    assert CountingFiles.walks <= 1  # one sorted index, not a walk per source
    assert sorted(reads) == sorted(set(reads))  # every file hashed once (the shared base too)
    assert "base/cm.yaml" in reads
