"""The symlink corpus: every way a repo may lead helm or kustomize to a file outside it (or
into the checkout's `.git`). A link to a folder or a file, a chain of links, a link inside a
dot-folder, a link reached through a folder link inside the repo, a link in a base several
levels up; for kustomize through `resources`, `components`, generators and patches, for Helm
through `templates/`, `charts/`, `values.yaml`, `.Files` and `valuesFiles`.

Each case runs the real CLI: `render` exits 1, blames the file that leads out, renders the
good source beside it, and never prints what lies outside."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.support.hostile import (
    CHART,
    OUTSIDE,
    assert_clean,
    chart,
    render,
    rendered_names,
    repo,
)

pytestmark = pytest.mark.integration

LEAK_CM = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak, namespace: default}\n"
           f"data: {{v: {OUTSIDE}}}\n")
WEB_CM = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\n"
          "data: {ok: 'yes'}\n")
GIT_CONFIG = f"[remote \"origin\"]\n\turl = https://bot:{OUTSIDE}@git.example/repo\n"
ONLY_APPS = {"gitgate.yaml": "paths: [apps, app, good]\n"}  # the bases are no sources


def stock(outside: Path) -> None:
    """What lies outside: a kustomize folder, a component, a chart and loose files."""
    write_files(outside, {
        "dir/kustomization.yaml": "resources: [cm.yaml]\n", "dir/cm.yaml": LEAK_CM,
        "comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\n"
                                   "kind: Component\nresources: [cm.yaml]\n",
        "comp/cm.yaml": LEAK_CM, "cm.yaml": LEAK_CM,
        "patch.yaml": WEB_CM.replace("ok: 'yes'", f"ok: {OUTSIDE}"),
        "chart/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        "chart/templates/cm.yaml": LEAK_CM.replace("leak", "subleak"),
        "charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        "charts/sub/templates/cm.yaml": LEAK_CM.replace("leak", "subleak"),
        "templates/cm.yaml": LEAK_CM})


def link(root: Path, rel: str, target: Path | str) -> None:
    """`rel` made a symlink to `target` (a path, or a relative link text)."""
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, root / rel)


def files_get(path: str) -> str:
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
            f"data: {{leak: {{{{ .Files.Get {json.dumps(path)} | quote }}}}}}\n")


def values_cm() -> str:
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
            "data: {leak: {{ .Values.leak | quote }}}\n")


@dataclass(frozen=True)
class Case:
    files: dict[str, str]
    links: Callable[[Path, Path], None]  # (repo root, outside folder): makes the links
    blamed: str  # the file the error names
    words: tuple[str, ...] = ()  # each in that error's message
    source: str = "apps/web"


def kust(text: str) -> dict[str, str]:
    return {"apps/web/kustomization.yaml": text, "apps/web/cm.yaml": WEB_CM}


WEB = "apps/web/kustomization.yaml"
OUT = "outside the repo"

KUSTOMIZE = {
    # the case of the report: a folder link, and a path going on below it
    "folder-below-a-link-two-up": Case(
        kust("resources: [../../shared/linkdir/dir]\n"),
        lambda r, o: link(r, "shared/linkdir", o), WEB, ("shared/linkdir", OUT)),
    "folder-below-a-link-one-up": Case(
        kust("resources: [../linkdir/dir]\n"),
        lambda r, o: link(r, "apps/linkdir", o), WEB, ("apps/linkdir", OUT)),
    "the-folder-link-itself": Case(
        kust("resources: [../../shared/linkdir]\n"),
        lambda r, o: link(r, "shared/linkdir", o / "dir"), WEB, ("shared/linkdir",)),
    "a-chain-of-links": Case(
        kust("resources: [../../shared/chain/dir]\n"),
        lambda r, o: (link(r, "shared/hop", o), link(r, "shared/chain", "hop")), WEB,
        ("shared/chain", OUT)),
    "a-chain-through-an-in-repo-folder-link": Case(
        kust("resources: [../../alias/linkdir/dir]\n"),
        lambda r, o: (link(r, "shared/linkdir", o), link(r, "alias", "shared")), WEB,
        ("shared/linkdir", OUT)),
    "a-link-inside-a-dot-folder": Case(
        kust("resources: [../../shared/.hidden/link/dir]\n"),
        lambda r, o: link(r, "shared/.hidden/link", o), WEB, ("shared/.hidden/link", OUT)),
    "a-dot-link-at-the-root": Case(
        kust("resources: [../../.link/dir]\n"),
        lambda r, o: link(r, ".link", o), WEB, (".link", OUT)),
    "a-component-below-a-link": Case(
        kust("resources: [cm.yaml]\ncomponents: [../../shared/linkdir/comp]\n"),
        lambda r, o: link(r, "shared/linkdir", o), WEB, ("shared/linkdir", OUT)),
    "a-base-several-levels-up": Case(
        {**ONLY_APPS, "apps/web/kustomization.yaml": "resources: [../../bases/a]\n",
         "bases/a/kustomization.yaml": "resources: [../b]\n",
         "bases/b/kustomization.yaml": "resources: [../c/deep]\n",
         "bases/c/deep/kustomization.yaml": "resources: [../../../shared/linkdir/dir]\n"},
        lambda r, o: link(r, "shared/linkdir", o), "bases/c/deep/kustomization.yaml",
        ("shared/linkdir", OUT)),
    "a-base-through-a-folder-link-climbing-out": Case(
        {**ONLY_APPS, "apps/web/kustomization.yaml": "resources: [../../alias/base]\n",
         # from the base's real place (repo/shared/base) this is the outside folder
         "shared/base/kustomization.yaml": "resources: [../../../outside/dir]\n"},
        lambda r, o: link(r, "alias", "shared"), "shared/base/kustomization.yaml", (OUT,)),
    "a-base-through-a-folder-link-naming-a-link": Case(
        {**ONLY_APPS, "apps/web/kustomization.yaml": "resources: [../../alias/base]\n",
         "shared/base/kustomization.yaml": "resources: [../../elsewhere/linkdir/dir]\n"},
        lambda r, o: (link(r, "alias", "shared"), link(r, "elsewhere/linkdir", o)),
        "shared/base/kustomization.yaml", ("elsewhere/linkdir", OUT)),
    "a-patch-in-a-base-through-a-folder-link": Case(
        {**ONLY_APPS, "apps/web/kustomization.yaml": "resources: [../../alias/base]\n",
         "shared/base/kustomization.yaml": "resources: [cm.yaml]\n"
                                           "patches: [{path: linkdir/patch.yaml}]\n",
         "shared/base/cm.yaml": WEB_CM},
        lambda r, o: (link(r, "alias", "shared"), link(r, "shared/base/linkdir", o)),
        "shared/base/linkdir", (OUT,)),
    "a-file-resource-below-a-folder-link": Case(
        kust("resources: [linkdir/cm.yaml]\n"),
        lambda r, o: link(r, "apps/web/linkdir", o), "apps/web/linkdir", (OUT,)),
    "a-file-link": Case(
        {"apps/web/kustomization.yaml": "resources: [cm.yaml]\n"},
        lambda r, o: link(r, "apps/web/cm.yaml", o / "cm.yaml"), "apps/web/cm.yaml", (OUT,)),
    "a-generator-file-below-a-folder-link": Case(
        kust("configMapGenerator: [{name: g, files: [linkdir/secret.txt]}]\n"),
        lambda r, o: link(r, "apps/web/linkdir", o), "apps/web/linkdir", (OUT,)),
    "a-generator-file-link": Case(
        kust("configMapGenerator: [{name: g, files: [s=secret.txt]}]\n"),
        lambda r, o: link(r, "apps/web/secret.txt", o / "secret.txt"), "apps/web/secret.txt",
        (OUT,)),
    "a-patch-below-a-folder-link": Case(
        kust("resources: [cm.yaml]\npatches: [{path: linkdir/patch.yaml}]\n"),
        lambda r, o: link(r, "apps/web/linkdir", o), "apps/web/linkdir", (OUT,)),
    "a-dir-option-below-a-folder-link": Case(
        {"apps/web/bundle.yaml": "dir: linkdir/dir\n", "apps/web/cm.yaml": WEB_CM},
        lambda r, o: link(r, "apps/web/linkdir", o), "apps/web/linkdir", (OUT,)),
}


def helm_files(**files: str) -> dict[str, str]:
    return chart("app", **files)


HELM = {
    "templates-a-folder-link": Case(
        {"app/Chart.yaml": CHART["Chart.yaml"]},
        lambda r, o: link(r, "app/templates", o / "templates"), "app/templates", (OUT,), "app"),
    "a-subchart-link": Case(
        helm_files(), lambda r, o: link(r, "app/charts/sub", o / "chart"), "app/charts/sub",
        (OUT,), "app"),
    "charts-a-folder-link": Case(
        helm_files(), lambda r, o: link(r, "app/charts", o / "charts"), "app/charts", (OUT,),
        "app"),
    "values-yaml-a-file-link": Case(
        helm_files(**{"templates/cm.yaml": values_cm()}),
        lambda r, o: link(r, "app/values.yaml", o / "values.yaml"), "app/values.yaml", (OUT,),
        "app"),
    "files-get-below-a-folder-link": Case(
        helm_files(**{"templates/cm.yaml": files_get("files/secret.txt")}),
        lambda r, o: link(r, "app/files", o), "app/files", (OUT,), "app"),
    "files-get-through-a-chain": Case(
        {**helm_files(**{"templates/cm.yaml": files_get("files/chain/secret.txt")}),
         "shared/keep.txt": "x\n"},
        lambda r, o: (link(r, "shared/hop", o), link(r, "shared/chain", "hop"),
                      link(r, "app/files", "../shared")), "shared/chain", (OUT,), "app"),
    "files-get-below-a-link-in-a-dot-folder": Case(
        helm_files(**{"templates/cm.yaml": files_get(".hidden/link/secret.txt"),
                      ".hidden/keep.txt": "x\n"}),
        lambda r, o: link(r, "app/.hidden/link", o), "app/.hidden/link", (OUT,), "app"),
    "a-link-in-a-subchart-two-levels-down": Case(
        {**helm_files(), **chart("app/charts/sub", **{
            "templates/cm.yaml": files_get("files/secret.txt")}),
         **chart("app/charts/sub/charts/inner", **{
             "templates/cm.yaml": files_get("files/secret.txt")})},
        lambda r, o: link(r, "app/charts/sub/charts/inner/files", o),
        "app/charts/sub/charts/inner/files", (OUT,), "app"),
    "a-values-file-option-below-a-folder-link": Case(
        {**helm_files(**{"templates/cm.yaml": values_cm()}),
         "app/bundle.yaml": "valuesFiles: [linkdir/values.yaml]\n"},
        lambda r, o: link(r, "app/linkdir", o), "app/linkdir", (OUT,), "app"),
    "a-folder-link-to-the-repo-root": Case(
        {**helm_files(**{"templates/cm.yaml": files_get("files/.git/config")}),
         ".git/config": GIT_CONFIG},
        lambda r, o: link(r, "app/files", ".."), "app/Chart.yaml", (".git",), "app"),
}


@pytest.mark.parametrize("case", [*KUSTOMIZE.values(), *HELM.values()],
                         ids=[*KUSTOMIZE, *HELM])
def test_nothing_outside_the_repo_is_rendered(tmp_path, outside, tools, case):
    stock(outside)
    root = repo(tmp_path, case.files)
    case.links(root, outside)
    result, document = render(root)
    assert result.returncode == 1, document
    assert_clean(result.stdout, result.stderr)
    assert "good" in rendered_names(document)
    blamed = [e for e in document["errors"] if e["file"] == case.blamed]
    assert blamed and {e["source"] for e in blamed} == {case.source}, document["errors"]
    for word in case.words:
        assert any(word in e["message"] for e in blamed), blamed


# ---------------------------------------------------------------- the checkout's .git
# A source at the repo root is the only one there (everything below belongs to it), so no
# good source renders beside it here.
ROOT = {
    "a-kustomize-generator-file-in-git": Case(
        {"kustomization.yaml": "configMapGenerator: [{name: g, files: [.git/config]}]\n"},
        lambda r, o: None, "kustomization.yaml", (".git",), "."),
    "a-kustomize-generator-through-a-link-to-the-root": Case(
        {"kustomization.yaml": "configMapGenerator: [{name: g, files: [alias/.git/config]}]\n"},
        lambda r, o: link(r, "alias", "."), "kustomization.yaml", (".git",), "."),
    "a-chart-at-the-root": Case(
        {**CHART, "templates/cm.yaml": files_get(".git/config")},
        lambda r, o: None, "Chart.yaml", (".git",), "."),
}


@pytest.mark.parametrize("case", ROOT.values(), ids=list(ROOT))
def test_nothing_of_the_checkouts_git_folder_is_rendered(tmp_path, tools, case):
    root = repo(tmp_path, {**case.files, ".git/config": GIT_CONFIG})
    case.links(root, tmp_path)
    result, document = render(root)
    assert result.returncode == 1, document
    assert_clean(result.stdout, result.stderr)
    blamed = [e for e in document["errors"] if e["file"] == case.blamed]
    assert blamed and {e["source"] for e in blamed} == {case.source}, document["errors"]
    for word in case.words:
        assert any(word in e["message"] for e in blamed), blamed


# ---------------------------------------------------------------- links that stay inside
def test_links_that_stay_inside_the_repo_still_render(tmp_path, tools):
    """A base reached through a folder link, and a chart's files through one, are the
    repo's own: they render, from where the links lead."""
    root = repo(tmp_path, {
        **ONLY_APPS, ".git/config": GIT_CONFIG,
        "apps/web/kustomization.yaml": "resources: [../../alias/base]\n",
        "shared/base/kustomization.yaml": "resources: [cm.yaml]\n",
        "shared/base/cm.yaml": WEB_CM,
        "shared/data/greeting.txt": "hello\n",
        **chart("app", **{"templates/cm.yaml": files_get("files/greeting.txt")})})
    link(root, "alias", "shared")
    link(root, "app/files", "../shared/data")
    result, document = render(root)
    assert result.returncode == 0, document["errors"]
    assert rendered_names(document) >= {"good", "web", "c"}
    [greeting] = [o for b in document["bundles"] for o in b["objects"]
                  if o["metadata"]["name"] == "c"]
    assert greeting["data"] == {"leak": "hello\n"}
