"""Compile per-cluster customizations into Karmada overriders. Pure: what a source renders by
default and for each `clusters:` entry in, per object the JSON-patch operations out.

Karmada's `plaintext` overrider takes only `add`, `replace` and `remove` (RFC 6902 without
`move`, `copy` or `test`), applied to the resource template as gitgate wrote it. The diff here
emits those three only: a changed mapping is walked key by key, a list of the same named items
(containers, ports) item by item, and any other changed list is replaced whole (an index-wise
diff of a list that gained or lost an item would patch the wrong item).
"""

from __future__ import annotations

from typing import Any

import jsonpatch  # RFC 6902, the JSON patch Karmada's plaintext overriders are
import jsonpointer

from gitgate.model import Manifest, ObjectRef
from gitgate.model.clusterspec import Customization, ObjectOverride, OverrideRule


def pointer(parts: list[str]) -> str:
    """A JSON pointer (RFC 6901) from path segments."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def json_diff(before: Any, after: Any, path: list[str] | None = None) -> list[Manifest]:
    """The add/replace/remove operations that turn `before` into `after`."""
    path = path or []
    if before == after:
        return []
    if _same_items(before, after):
        return [op for index, (a, b) in enumerate(zip(before, after, strict=True))
                for op in json_diff(a, b, [*path, str(index)])]
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [{"path": pointer(path), "operator": "replace", "value": after}]
    ops: list[Manifest] = []
    for key in sorted(before, key=str):
        if key not in after:
            ops.append({"path": pointer([*path, str(key)]), "operator": "remove"})
    for key in sorted(after, key=str):
        if key not in before:
            ops.append({"path": pointer([*path, str(key)]), "operator": "add",
                        "value": after[key]})
        else:
            ops += json_diff(before[key], after[key], [*path, str(key)])
    return ops


def _same_items(before: Any, after: Any) -> bool:
    """Two lists of the same named items in the same order (containers, ports, env): walked
    item by item, so that an override says `/containers/0/image`, not the whole list."""
    if not (isinstance(before, list) and isinstance(after, list)) or len(before) != len(after):
        return False
    return all(isinstance(a, dict) and isinstance(b, dict) and "name" in a
               and a.get("name") == b.get("name") for a, b in zip(before, after, strict=True))


def compile_overrides(default: tuple[Manifest, ...],
                      variants: list[tuple[Customization, tuple[Manifest, ...]]]
                      ) -> tuple[tuple[ObjectOverride, ...], list[str]]:
    """Per object that some customization changes, one rule per customization that changes
    it. A customization that adds or drops an object cannot be an override: it is a problem
    naming the objects (the bundle's objects are the same on every cluster)."""
    by_ref = {ObjectRef.of(o): o for o in default}
    rules: dict[ObjectRef, list[OverrideRule]] = {}
    problems: list[str] = []
    for index, (customization, objects) in enumerate(variants):
        mine = {ObjectRef.of(o): o for o in objects}
        extra = sorted(set(mine) - set(by_ref))
        dropped = sorted(set(by_ref) - set(mine))
        if extra or dropped:
            parts = []
            if extra:
                parts.append("renders " + ", ".join(map(str, extra)) + " that the other "
                             "clusters do not get")
            if dropped:
                parts.append("does not render " + ", ".join(map(str, dropped)))
            problems.append(
                f"clusters[{index}] ({customization.describe()}) {' and '.join(parts)}: a "
                "customization may change objects but not add or remove them; render the "
                "object for every cluster (Karmada's placement decides where it goes)")
            continue
        secrets = sorted(ref for ref, obj in mine.items()
                         if (ref.group, ref.kind) == ("", "Secret") and obj != by_ref[ref])
        if secrets:
            problems.append(
                f"clusters[{index}] ({customization.describe()}) changes "
                f"{', '.join(map(str, secrets))}: a Secret is never customized per cluster "
                "(its values would be written in clear into an OverridePolicy); render one "
                "Secret per cluster under different names, or keep the values out of Git")
            continue
        for ref, obj in mine.items():
            ops = json_diff(by_ref[ref], obj)
            if ops:
                rules.setdefault(ref, []).append(
                    OverrideRule(customization.target_cluster(), tuple(ops), index + 1))
    overrides = tuple(ObjectOverride(ref, str(by_ref[ref]["apiVersion"]), tuple(found))
                      for ref, found in sorted(rules.items()))
    return overrides, problems


def apply_operations(obj: Manifest, operations: list[Manifest]) -> Manifest:
    """`obj` with Karmada's plaintext operations applied, as its override manager does
    (RFC 6902, through python-json-patch); ValueError says why they do not apply."""
    patch = [{"op": op.get("operator"), "path": op.get("path"),
              **({"value": op.get("value")} if op.get("operator") != "remove" else {})}
             for op in operations]
    try:
        return jsonpatch.apply_patch(obj, patch)  # type: ignore[no-any-return]
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise ValueError(str(exc)) from None
