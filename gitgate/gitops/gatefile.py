"""Build and edit Gate documents for pause/resume/approve. Pure: data in, text out."""

from __future__ import annotations

import io
import re
from datetime import datetime
from typing import Any

from ruamel.yaml import YAML

from gitgate.errors import ConfigError
from gitgate.gate.spec import API_VERSION, KIND, PAUSED_AT, PAUSED_BY, PAUSED_FOR
from gitgate.model import Gate
from gitgate.timespec import rfc3339

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
        parts = [part for part in selector.split(",") if part.strip()]
        odd = [part for part in parts if "=" not in part or not part.split("=", 1)[0].strip()]
        if odd or not parts:
            raise ConfigError(
                f"selector {selector!r} mixes a bundle name and labels ({', '.join(odd)}): give "
                "either a bundle glob (`shop/*`) or labels only (`team=payments,tier=db`)")
        labels = dict(part.split("=", 1) for part in parts)
        return {"selector": {"matchLabels": {k.strip(): v.strip() for k, v in labels.items()}}}
    if not selector.strip() or any(c in selector for c in ",\n\r\t"):
        raise ConfigError(f"selector {selector!r} is not a bundle glob (`shop`, `shop/*`) or "
                          "labels (`team=payments,tier=db`)")
    return {"bundles": [selector]}


def written_for(gate: Gate, selector: str) -> bool:
    """The gate is exactly what `gitgate pause SELECTOR` writes: it says so and selects what
    that selector selects, nothing more (the annotation alone proves nothing: anyone can
    write it on any gate)."""
    if gate.paused_for != selector or gate.windows:
        return False
    try:
        spec = parse_selector(selector)
    except ConfigError:
        return False
    labels = spec.get("selector", {}).get("matchLabels", {})
    return gate.bundles == tuple(spec.get("bundles", ())) and dict(gate.match_labels) == labels


def new_gate(name: str, selector: str, reason: str, *, action: str = "hold",
             until: datetime | None = None, clusters: tuple[str, ...] = (),
             by: str = "", at: datetime | None = None) -> dict[str, Any]:
    """`by` and `at`: who paused (their git identity) and when, kept beside the reason."""
    spec: dict[str, Any] = {**parse_selector(selector), "action": action, "reason": reason}
    if clusters:
        spec["clusters"] = list(clusters)
    if until is not None:
        spec["until"] = rfc3339(until)
    annotations = {PAUSED_FOR: selector}
    if by:
        annotations[PAUSED_BY] = by
    if at is not None:
        annotations[PAUSED_AT] = rfc3339(at)
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": name, "annotations": annotations}, "spec": spec}


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def dump_gate(gate: dict[str, Any]) -> str:
    out = io.StringIO()
    _yaml().dump(gate, out)
    return out.getvalue()


def _guess_indent(text: str) -> tuple[int, int]:
    """The file's mapping indent and the offset of its sequence dashes under their key."""
    lines = [line for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith(("#", "---"))]
    mapping = offset = None
    for parent, line in zip(lines, lines[1:], strict=False):
        if not parent.rstrip().endswith(":") or parent.lstrip().startswith("- "):
            continue
        depth = (len(line) - len(line.lstrip())) - (len(parent) - len(parent.lstrip()))
        if line.lstrip().startswith("- "):
            offset = depth if offset is None else offset
        elif depth > 0 and mapping is None:
            mapping = depth
    return mapping or 2, max(offset or 0, 0)


def _editor(text: str) -> YAML:
    """A round-trip YAML that keeps the file's quoting, comments and indentation."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    mapping, offset = _guess_indent(text)
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    yaml.width = 4096
    return yaml


def _dump_all(yaml: YAML, documents: list[Any]) -> str:
    out = io.StringIO()
    if len(documents) == 1:
        yaml.dump(documents[0], out)
    else:
        yaml.dump_all(documents, out)
    return out.getvalue()


def with_approval(text: str, bundle: str, digest: str) -> str:
    """The gate file's text with `approve` letting `digest` of `bundle` through (comments,
    quoting and indentation kept); an earlier approval of the same bundle is replaced, others
    are kept."""
    yaml = _editor(text)
    documents = list(yaml.load_all(text))
    for doc in documents:
        spec = doc["spec"]
        current = spec.get("approve")
        entries = [current] if isinstance(current, dict) else list(current or [])
        entries = [e for e in entries if e.get("bundle") != bundle]
        entries.append({"bundle": bundle, "digest": digest})
        spec["approve"] = entries[0] if len(entries) == 1 else entries
    return _dump_all(yaml, documents)


def edited_gate_file(text: str, gate: str, remove_bundles: tuple[str, ...]) -> str | None:
    """The gate file without gate `gate` (None when no document is left), or with
    `remove_bundles` taken out of its spec.bundles; everything else kept as written."""
    yaml = _editor(text)
    documents = [d for d in yaml.load_all(text) if d is not None]
    kept = []
    for doc in documents:
        if (doc.get("metadata") or {}).get("name") != gate:
            kept.append(doc)
        elif remove_bundles:
            bundles = doc["spec"].get("bundles")
            if isinstance(bundles, str):
                bundles = [bundles]
            doc["spec"]["bundles"] = type(bundles)(b for b in bundles if b not in remove_bundles)
            kept.append(doc)
    return _dump_all(yaml, kept) if kept else None


def with_reason(text: str, gate: str, reason: str, by: str, at: datetime) -> str:
    """The gate file with one more reason on gate `gate` (in spec.reasons, with who and
    when): a second pause of the same selector keeps the first one's reason and adds its own."""
    yaml = _editor(text)
    documents = [d for d in yaml.load_all(text) if d is not None]
    for doc in documents:
        if (doc.get("metadata") or {}).get("name") == gate:
            entry: dict[str, str] = {"reason": reason}
            if by:
                entry["by"] = by
            entry["at"] = rfc3339(at)
            doc["spec"].setdefault("reasons", []).append(entry)
    return _dump_all(yaml, documents)


def with_until(text: str, gate: str, until: datetime | None) -> str:
    """The gate file with gate `gate` lasting until `until` (None: until resumed)."""
    yaml = _editor(text)
    documents = [d for d in yaml.load_all(text) if d is not None]
    for doc in documents:
        if (doc.get("metadata") or {}).get("name") == gate:
            if until is None:
                doc["spec"].pop("until", None)
            else:
                doc["spec"]["until"] = rfc3339(until)
    return _dump_all(yaml, documents)
