"""Apply a customization's patches with the real kustomize: the objects a source rendered and
the patches (kustomize's own `patches` entries: JSON 6902 lists or strategic-merge documents)
go into a kustomization in a private temporary folder, and `kustomize build` returns the
patched objects. Strategic merge needs each kind's merge keys, which kustomize knows and a
hand-written merge would get wrong; nothing of the repo is read."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from gitgate.model import Manifest
from gitgate.render.kustomize import kustomize_build
from gitgate.yamlio import dump_all


def patched(objects: tuple[Manifest, ...], patches: tuple[Manifest, ...],
            kustomize: tuple[str, ...], display: str) -> list[object]:
    """`objects` with `patches` applied, in kustomize's order (raises RenderError)."""
    with tempfile.TemporaryDirectory(prefix="gitgate-patch-") as folder:
        root = Path(folder)
        (root / "objects.yaml").write_text(dump_all(list(objects)))
        entries = [{"patch": json.dumps(p["patch"]), **({"target": p["target"]}
                                                         if "target" in p else {})}
                   for p in patches]
        (root / "kustomization.yaml").write_text(json.dumps(
            {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
             "resources": ["objects.yaml"], "patches": entries}))
        return kustomize_build(kustomize, root, display=display)
