"""`render`: bundles as a YAML stream (one comment per bundle) or a JSON document. Pure."""

from __future__ import annotations

from typing import Any

from gitgate.model import Bundle, Problem
from gitgate.yamlio import dump_all


def render_document(bundles: list[Bundle], problems: list[Problem]) -> dict[str, Any]:
    return {
        "bundles": [{"name": b.name, "source": {"path": b.source.path, "kind": str(b.source.kind)},
                     "objects": list(b.objects)} for b in bundles if not b.failed],
        "errors": [p.as_dict() for p in problems],
    }


def render_yaml(bundles: list[Bundle]) -> str:
    documents: list[Any] = []
    comments: list[str | None] = []
    for bundle in bundles:
        for index, obj in enumerate(bundle.objects):
            documents.append(obj)
            comments.append(f"bundle {bundle.name} (source {bundle.source.path}, "
                            f"{bundle.source.kind})" if index == 0 else None)
    return dump_all(documents, comments)
