from dataclasses import replace

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


def linked_tree(files: dict[str, str], escaping: tuple[str, ...] = (),
                dir_links: dict[str, str] | None = None):
    return replace(memory_tree(files, escaping), dir_links=dir_links or {})


@pytest.mark.parametrize("entry, link", [
    ("../../shared/out/dir", "shared/out"),  # a path going on below a link that leaves
    ("../../alias/out/dir", "shared/out"),  # ... reached through a folder link in the repo
    ("../../shared/.d/out/x.yaml", "shared/.d/out"),
])
def test_a_path_through_a_link_that_leaves_is_refused_naming_the_link(entry, link):
    tree = linked_tree({"apps/web/kustomization.yaml": f"resources: [{entry}]\n"},
                       escaping=("shared/out", "shared/.d/out"), dir_links={"alias": "shared"})
    with pytest.raises(RenderError) as raised:
        check_kustomization(tree, "apps/web")
    assert raised.value.file == "apps/web/kustomization.yaml"
    assert entry in raised.value.message and link in raised.value.message


def test_a_base_through_a_folder_link_is_walked_where_it_really_is():
    tree = linked_tree({"apps/web/kustomization.yaml": "resources: [../../alias/base]\n",
                        "shared/base/kustomization.yaml": "resources: [../../../x]\n"},
                       dir_links={"alias": "shared"})
    with pytest.raises(RenderError, match="outside the repo") as raised:
        check_kustomization(tree, "apps/web")
    assert raised.value.file == "shared/base/kustomization.yaml"
    good = linked_tree({"apps/web/kustomization.yaml": "resources: [../../alias/base]\n",
                        "shared/base/kustomization.yaml": "resources: [cm.yaml]\n"},
                       dir_links={"alias": "shared"})
    assert sorted(check_kustomization(good, "apps/web")) == ["apps/web", "shared/base"]


@pytest.mark.parametrize("entry", [".git/config", "alias/.git/config", "sub/../.git"])
def test_the_checkouts_git_folder_is_outside_the_repo(entry):
    tree = linked_tree({"kustomization.yaml": f"configMapGenerator: [{{name: g, files: "
                        f"[{entry}]}}]\n"}, dir_links={"alias": "."})
    with pytest.raises(RenderError, match=r"\.git") as raised:
        check_kustomization(tree, ".")
    assert raised.value.file == "kustomization.yaml"


@pytest.mark.parametrize("path, real, exit", [
    ("a/b", "a/b", None), ("alias/b", "shared/b", None), ("alias/../x", "x", None),
    ("up/x", "x", None), ("alias/out/b", "alias/out/b", "shared/out"),
    ("..", "..", ".."), ("alias/../..", "alias/../..", ".."),
    (".git/config", ".git/config", ".git"),
])
def test_a_path_is_resolved_through_every_link_on_it(path, real, exit):
    tree = linked_tree({}, escaping=("shared/out",), dir_links={"alias": "shared", "up": "."})
    where = tree.resolve(path)
    assert (where.path, where.exit) == (real, exit)
