"""Check a kustomization graph before kustomize runs: no remote bases, no helm inflation,
nothing outside the repo, no symlink leaving it. Pure over a RepoTree.

Every path a kustomization names is checked where kustomize would read it: joined to the real
folder of that kustomization and cleaned (as kustomize joins it), then followed through every
symlink on it (`RepoTree.resolve`). A folder reached so becomes a root of its own in kustomize,
beyond the reach of its load restrictor, so it must lie in the repo and is checked in turn,
at its real place."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from gitgate.errors import RenderError
from gitgate.model import join
from gitgate.source.discover import KUSTOMIZATION_FILES
from gitgate.source.tree import GIT_DIR, RepoTree
from gitgate.yamlio import YamlSyntaxError, load_one

_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@|git::|github\.com/|gitlab\.com/|"
                     r"bitbucket\.org/|dev\.azure\.com/)|\?(?:ref|version|submodules)=", re.I)
_REFUSED_FIELDS = {
    "helmCharts": "helm chart inflation is disabled: make the chart its own Helm source",
    "helmChartInflationGenerator": "helm chart inflation is disabled: make the chart its own "
                                   "Helm source",
    "helmGlobals": "helm chart inflation is disabled: make the chart its own Helm source",
}


def looks_remote(entry: str) -> bool:
    return bool(_REMOTE.search(entry))


def has_kustomization(tree: RepoTree, folder: str) -> bool:
    where = tree.resolve(folder)
    return where.exit is None and _kustomization_file(tree, where.path) is not None


def _kustomization_file(tree: RepoTree, folder: str) -> str | None:
    for name in KUSTOMIZATION_FILES:
        if join(folder, name) in tree.files:
            return join(folder, name)
    return None


def _referenced_paths(doc: dict[str, Any]) -> list[str]:
    """Every local file or folder a kustomization names."""
    paths: list[str] = []
    for key in ("resources", "bases", "components", "crds", "patchesStrategicMerge",
                "configurations", "generators", "transformers", "validators"):
        paths += [v for v in doc.get(key) or [] if isinstance(v, str)]
    for key in ("patches", "patchesJson6902", "replacements"):
        paths += [p["path"] for p in doc.get(key) or [] if isinstance(p, dict)
                  and isinstance(p.get("path"), str)]
    if isinstance(doc.get("openapi"), dict) and isinstance(doc["openapi"].get("path"), str):
        paths.append(doc["openapi"]["path"])
    for key in ("configMapGenerator", "secretGenerator"):
        for gen in doc.get(key) or []:
            if not isinstance(gen, dict):
                continue
            files = [f.split("=", 1)[-1] for f in gen.get("files") or [] if isinstance(f, str)]
            envs = [e for e in gen.get("envs") or [] if isinstance(e, str)]
            env = [gen["env"]] if isinstance(gen.get("env"), str) else []
            paths += files + envs + env
    return paths


def check_kustomization(tree: RepoTree, folder: str) -> list[str]:
    """Walk the kustomization graph from `folder`; raise RenderError on anything unsafe.

    Returns every repo folder the build loads from (for cache keys and symlink checks).
    """
    visited: list[str] = []
    start = tree.resolve(folder)
    if start.exit is not None:
        raise RenderError(f"{folder} leads out of the repo through {start.exit}",
                          file=start.exit)
    pending = [start.path]
    while pending:
        current = pending.pop()
        if current in visited:
            continue
        visited.append(current)
        file = _kustomization_file(tree, current)
        if file is None:
            raise RenderError("no kustomization.yaml in this folder", file=current)
        _check_links(tree, current, file)
        try:
            doc = load_one(tree.read(file) or "") or {}
        except YamlSyntaxError as exc:
            raise RenderError(f"{exc}", file=file, line=exc.line) from None
        if not isinstance(doc, dict):
            raise RenderError("a kustomization must be a mapping", file=file, line=1)
        for key, why in _REFUSED_FIELDS.items():
            if key in doc:
                raise RenderError(f"`{key}` refused: {why}", file=file)
        for entry in _referenced_paths(doc):
            target = _target(tree, current, entry, file)
            if _kustomization_file(tree, target) is not None:
                pending.append(target)
    return visited


def _target(tree: RepoTree, folder: str, entry: str, file: str) -> str:
    """The real repo path `entry` of the kustomization `file` (in the real `folder`) names;
    RenderError when it is remote or leads out of the repo."""
    if looks_remote(entry):
        raise RenderError(
            f"remote base {entry!r} refused: gitgate never fetches from the network "
            "while rendering; vendor it into the repo", file=file)
    joined = posixpath.normpath(join(folder, entry))
    where = tree.resolve(joined)
    if posixpath.isabs(entry) or where.exit == "..":
        raise RenderError(f"{entry!r} points outside the repo; keep everything a "
                          "kustomization loads inside the repo", file=file)
    if where.exit == GIT_DIR:
        raise RenderError(f"{entry!r} is in the checkout's {GIT_DIR} folder, which is not "
                          "part of the repo (its config may hold the credentials gitgate "
                          "fetches with); name files of the repo only", file=file)
    if where.exit is not None:
        raise RenderError(f"{entry!r} leads through the symlink {where.exit}, which points "
                          "outside the repo (or nowhere); replace the link with the files "
                          "themselves", file=file)
    return where.path


def _check_links(tree: RepoTree, folder: str, file: str) -> None:
    link = tree.escape_from(folder)
    if link is not None:
        raise RenderError(f"symlink {link} points outside the repo (or nowhere), and {folder} "
                          "reaches it; replace it with the file itself", file=link)
