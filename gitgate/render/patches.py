"""Apply a customization's patches with the real kustomize: the objects a source rendered and
the patches (kustomize's own `patches` entries: JSON 6902 lists or strategic-merge documents)
go into a kustomization in a private temporary folder, and `kustomize build` returns the
patched objects. Strategic merge needs each kind's merge keys, which kustomize knows and a
hand-written merge would get wrong; nothing of the repo is read.

A strategic-merge patch without a `target` acts on the objects of its kind and name in any
namespace (kustomize alone would look for it outside every namespace and refuse it for a
namespaced object); one that names a namespace acts there only. A patch whose target names no
object the bundle renders is refused rather than silently doing nothing, and a patch kustomize
cannot apply is named by its index."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from gitgate.errors import RenderError
from gitgate.model import Manifest
from gitgate.render.kustomize import kustomize_build
from gitgate.yamlio import dump_all


class PatchFailed(RenderError):
    """Patch `index` (from 0, in the entry's `patches`) cannot be applied."""

    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.index = index


def patched(objects: tuple[Manifest, ...], patches: tuple[Manifest, ...],
            kustomize: tuple[str, ...], display: str) -> list[object]:
    """`objects` with `patches` applied, in kustomize's order (raises PatchFailed naming the
    patch, or RenderError)."""
    entries = [_entry(p) for p in patches]
    for index, entry in enumerate(entries):
        missing = _matches_nothing(entry.get("target"), objects)
        if missing:
            raise PatchFailed(f"its target names {missing}, which this bundle does not render "
                              f"(it renders {_rendered(objects)}); fix the target (or the "
                              "patch's kind, name and namespace)", index)
    try:
        return _build(objects, entries, kustomize, display)
    except RenderError as exc:
        failed = exc
    for index in range(len(entries)):  # which patch: the first whose prefix fails
        try:
            _build(objects, entries[:index + 1], kustomize, display)
        except RenderError as exc:
            raise PatchFailed(f"kustomize cannot apply it: {_said(exc.message)}; check its "
                              "paths and fields against what the bundle renders "
                              "(`gitgate render` shows it)", index) from None
    raise failed


def _build(objects: tuple[Manifest, ...], entries: list[Manifest],
           kustomize: tuple[str, ...], display: str) -> list[object]:
    with tempfile.TemporaryDirectory(prefix="gitgate-patch-") as folder:
        root = Path(folder)
        (root / "objects.yaml").write_text(dump_all(list(objects)))
        (root / "kustomization.yaml").write_text(json.dumps(
            {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
             "resources": ["objects.yaml"], "patches": entries}))
        return kustomize_build(kustomize, root, display=display)


def _entry(patch: Manifest) -> Manifest:
    """kustomize's `patches` entry; a strategic merge without a target gets one from its own
    kind, name (and namespace and group, when it gives them)."""
    body = patch["patch"]
    target = patch.get("target")
    if target is None and isinstance(body, dict):
        meta = body.get("metadata") or {}
        group, _, version = str(body.get("apiVersion", "")).rpartition("/")
        derived = {"kind": body.get("kind"), "name": meta.get("name"), "group": group,
                   "version": version, "namespace": meta.get("namespace")}
        target = {k: v for k, v in derived.items() if isinstance(v, str) and (v or k == "group")}
    return {"patch": json.dumps(body), **({"target": target} if target else {})}


_PLAIN_NAME = re.compile(r"[-a-z0-9.:]+")


def _matches_nothing(target: Manifest | None, objects: tuple[Manifest, ...]) -> str | None:
    """What a plain target (a kind and a name, no selectors or patterns) names when no object
    matches it; None when something matches or the target is not plain."""
    if not isinstance(target, dict) or set(target) - {"kind", "name", "namespace", "group",
                                                      "version"}:
        return None
    kind, name = target.get("kind"), target.get("name")
    if not isinstance(kind, str) or not isinstance(name, str) or not _PLAIN_NAME.fullmatch(name):
        return None
    for obj in objects:
        meta = obj.get("metadata") or {}
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if (obj.get("kind") == kind and meta.get("name") == name
                and target.get("namespace") in (None, meta.get("namespace"))
                and target.get("group") in (None, group)):
            return None
    where = f" in namespace {target['namespace']}" if target.get("namespace") else ""
    return f"{kind} {name}{where}"


def _rendered(objects: tuple[Manifest, ...], most: int = 5) -> str:
    names = [f"{o.get('kind')} {(o.get('metadata') or {}).get('name')}" for o in objects]
    shown = ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most
                                       else "")
    return shown or "nothing"


def _said(message: str) -> str:
    """kustomize's complaint without the build around it (what gitgate ran is no concern of
    the user's): its last line, without `Error:` and the command gitgate wrapped it in."""
    text = re.sub(r"^kustomize build \S+ failed: ", "", message)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = lines[-1] if lines else text
    return re.sub(r"^(error|Error):\s*", "", said)
