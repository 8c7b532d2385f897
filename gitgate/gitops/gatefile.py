"""Build and edit Gate documents for pause/resume/approve. Pure: data in, text out."""

from __future__ import annotations

import io
import re
from datetime import datetime
from typing import Any

from ruamel.yaml import YAML

from gitgate.gate.spec import API_VERSION, KIND

_NOT_NAME = re.compile(r"[^a-z0-9-]+")


def gate_name_for(selector: str, taken: set[str]) -> str:
    base = "pause-" + (_NOT_NAME.sub("-", selector.lower()).strip("-") or "all")
    base = base[:60].rstrip("-")
    name, index = base, 2
    while name in taken:
        name, index = f"{base}-{index}", index + 1
    return name


def parse_selector(selector: str) -> dict[str, Any]:
    """`shop/*` is a bundle glob; `team=payments,tier=db` is a label selector."""
    if "=" in selector:
        labels = dict(part.split("=", 1) for part in selector.split(",") if part)
        return {"selector": {"matchLabels": {k.strip(): v.strip() for k, v in labels.items()}}}
    return {"bundles": [selector]}


def new_gate(name: str, selector: str, reason: str, *, action: str = "hold",
             until: datetime | None = None, clusters: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {**parse_selector(selector), "action": action, "reason": reason}
    if clusters:
        spec["clusters"] = list(clusters)
    if until is not None:
        spec["until"] = until.isoformat().replace("+00:00", "Z")
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def dump_gate(gate: dict[str, Any]) -> str:
    out = io.StringIO()
    _yaml().dump(gate, out)
    return out.getvalue()


def with_approval(text: str, bundle: str, digest: str) -> str:
    """The gate file's text with `approve` letting `digest` of `bundle` through (comments kept);
    an earlier approval of the same bundle is replaced, others are kept."""
    yaml = _yaml()
    documents = list(yaml.load_all(text))
    for doc in documents:
        spec = doc["spec"]
        current = spec.get("approve")
        entries = [current] if isinstance(current, dict) else list(current or [])
        entries = [e for e in entries if e.get("bundle") != bundle]
        entries.append({"bundle": bundle, "digest": digest})
        spec["approve"] = entries[0] if len(entries) == 1 else entries
    out = io.StringIO()
    yaml.dump_all(documents, out)
    return out.getvalue()
