import pytest

from gitgate.errors import RenderError
from gitgate.render.kustomize_guard import check_kustomization, looks_remote
from tests.conftest import memory_tree


@pytest.mark.parametrize("entry", [
    "github.com/org/repo//deploy?ref=v1", "https://example.com/base.yaml",
    "git@github.com:org/repo.git", "ssh://git@host/repo", "git::https://host/repo",
    "../base?ref=main"])
def test_remote_references_are_recognised(entry):
    assert looks_remote(entry)


@pytest.mark.parametrize("entry", ["../../base", "deploy.yaml", "components/x"])
def test_local_references_are_not_remote(entry):
    assert not looks_remote(entry)


def test_graph_walk_returns_every_loaded_folder():
    tree = memory_tree({
        "app/overlay/kustomization.yaml": "resources: [../base, extra.yaml]\n",
        "app/overlay/extra.yaml": "kind: ConfigMap\n",
        "app/base/kustomization.yaml": "resources: [d.yaml]\n",
        "app/base/d.yaml": "kind: Deployment\n"})
    assert sorted(check_kustomization(tree, "app/overlay")) == ["app/base", "app/overlay"]


@pytest.mark.parametrize("files, words", [
    ({"k/kustomization.yaml": "resources: [github.com/x/y//base?ref=v1]\n"}, "remote base"),
    ({"k/kustomization.yaml": "resources: [../../outside]\n"}, "outside the repo"),
    ({"k/kustomization.yaml": "helmCharts: [{name: x}]\n"}, "helm chart inflation"),
    ({"k/kustomization.yaml": "configMapGenerator: [{name: c, files: [../../../etc/passwd]}]\n"},
     "outside the repo"),
    ({"k/kustomization.yaml": "resources: [../base]\n",
      "base/kustomization.yaml": "resources: [https://evil.example/x.yaml]\n"}, "remote base"),
])
def test_unsafe_kustomizations_are_refused_with_the_file(files, words):
    with pytest.raises(RenderError) as raised:
        check_kustomization(memory_tree(files), "k")
    assert words in raised.value.message
    assert raised.value.file.endswith("kustomization.yaml")


def test_symlink_leaving_the_repo_is_refused():
    tree = memory_tree({"k/kustomization.yaml": "resources: [cm.yaml]\n"},
                       escaping=("k/cm.yaml",))
    with pytest.raises(RenderError, match="symlink"):
        check_kustomization(tree, "k")
