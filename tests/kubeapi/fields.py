"""Server-side apply field ownership: field sets as paths, conflicts, removal, merge, and the
`fieldsV1` encoding the API server shows in managedFields.

A path is a tuple of elements: `f:<key>` for a map key, `k:{"name":...}` for an item of a list
keyed by `name`, and a final `.` for the membership of a keyed item. As in Kubernetes' schemas:
the built-in lists merged by name (containers, env, volumes, ...) are keyed, every other list is
atomic (custom resources have atomic lists unless their schema says otherwise), and a
LabelSelector (`selector: {matchLabels, matchExpressions}`) is atomic.
"""

from __future__ import annotations

import copy
import json
from typing import Any

Path = tuple[str, ...]
MISSING = object()
_IGNORED_TOP = {"apiVersion", "kind", "status"}
_IGNORED_META = {"name", "namespace", "uid", "resourceVersion", "generation",
                 "creationTimestamp", "managedFields", "deletionTimestamp", "selfLink"}


KEYED_LISTS = {"containers", "initContainers", "ephemeralContainers", "volumes", "env"}


def _keyed(key: str | None, value: Any, builtin: bool) -> bool:
    return (builtin and key in KEYED_LISTS and isinstance(value, list) and bool(value)
            and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in value))


def _atomic_map(key: str | None, value: Any) -> bool:
    return (key == "selector" and isinstance(value, dict) and bool(value)
            and set(value) <= {"matchLabels", "matchExpressions"})


def _item_key(item: dict) -> str:
    return "k:" + json.dumps({"name": item["name"]}, separators=(",", ":"))


def _walk(value: Any, prefix: Path, key: str | None, builtin: bool,
          deduced: bool = False) -> set[Path]:
    if isinstance(value, dict) and not _atomic_map(key, value):
        if not value:
            return {prefix}
        out: set[Path] = {(*prefix, ".")} if deduced and prefix else set()
        for child_key, child in value.items():
            out |= _walk(child, (*prefix, f"f:{child_key}"), child_key, builtin, deduced)
        return out
    if _keyed(key, value, builtin):
        out = set()
        for item in value:
            item_path = (*prefix, _item_key(item))
            out.add((*item_path, "."))
            out |= _walk(item, item_path, None, builtin)
        return out
    return {prefix}


def field_set(obj: dict, builtin: bool = True, deduced: bool = False) -> set[Path]:
    """The fields an applied configuration sets (identity and status fields excluded).
    `deduced`: a custom resource without a structural schema (preserve-unknown-fields), whose
    maps are owned as a whole too (a `.` entry), as the API server records them."""
    body = {k: v for k, v in obj.items() if k not in _IGNORED_TOP}
    meta = {k: v for k, v in (body.pop("metadata", None) or {}).items() if k not in _IGNORED_META}
    if meta:
        body["metadata"] = meta
    return _walk(body, (), None, builtin, deduced) if body else set()


def get_at(obj: Any, path: Path) -> Any:
    current = obj
    for element in path:
        if element == ".":
            return True if current is not MISSING else MISSING
        if element.startswith("f:"):
            if not isinstance(current, dict) or element[2:] not in current:
                return MISSING
            current = current[element[2:]]
        else:
            name = json.loads(element[2:])["name"]
            if not isinstance(current, list):
                return MISSING
            current = next((i for i in current if isinstance(i, dict) and i.get("name") == name),
                           MISSING)
            if current is MISSING:
                return MISSING
    return current


def remove_at(obj: dict, path: Path) -> None:
    """Delete the field at `path` (a keyed item when the path ends in `.`), then drop maps
    that became empty on the way."""
    parents: list[tuple[Any, str]] = []
    current: Any = obj
    for element in path[:-1]:
        if element.startswith("f:"):
            if not isinstance(current, dict) or element[2:] not in current:
                return
            parents.append((current, element))
            current = current[element[2:]]
        else:
            name = json.loads(element[2:])["name"]
            item = next((i for i in current or [] if isinstance(i, dict)
                         and i.get("name") == name), None)
            if item is None:
                return
            parents.append((current, element))
            current = item
    last = path[-1]
    if last == "." and (not parents or parents[-1][1].startswith("f:")):
        return  # a map's own membership: its fields go one by one, empty maps are dropped
    if last == ".":
        container, element = parents[-1]
        name = json.loads(element[2:])["name"]
        container[:] = [i for i in container if not (isinstance(i, dict) and i.get("name") == name)]
    elif last.startswith("f:") and isinstance(current, dict):
        current.pop(last[2:], None)
    for container, element in reversed(parents):
        if element.startswith("f:"):
            child = container.get(element[2:])
            if child in ({}, []):
                container.pop(element[2:], None)


def merge(live: Any, config: Any, key: str | None = None, builtin: bool = True) -> Any:
    """Apply `config` over `live`: maps merge, keyed lists merge by name, the rest is replaced."""
    if isinstance(live, dict) and isinstance(config, dict) and not _atomic_map(key, config):
        out = dict(live)
        for child_key, value in config.items():
            out[child_key] = (merge(live[child_key], value, child_key, builtin)
                              if child_key in live else copy.deepcopy(value))
        return out
    if _keyed(key, live, builtin) and _keyed(key, config, builtin):
        by_name = {i["name"]: i for i in live}
        out_list = [merge(by_name[i["name"]], i, None, builtin) if i["name"] in by_name
                    else copy.deepcopy(i) for i in config]
        configured = {i["name"] for i in config}
        return [i for i in live if i["name"] not in configured] + out_list
    return copy.deepcopy(config)


def covered(path: Path, owned: set[Path]) -> bool:
    """Whether `path` or anything below it is owned."""
    return any(p[:len(path)] == path for p in owned)


def describe(path: Path) -> str:
    """`.data.x`, `.spec.template.spec.containers[name="web"].image`."""
    out = ""
    for element in path:
        if element == ".":
            continue
        if element.startswith("f:"):
            out += "." + element[2:]
        else:
            out += f'[name="{json.loads(element[2:])["name"]}"]'
    return out


def to_fields_v1(paths: set[Path]) -> dict:
    tree: dict = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return tree


def from_fields_v1(tree: dict, prefix: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    for element, child in tree.items():
        path = (*prefix, element)
        if child:
            paths |= from_fields_v1(child, path)
        else:
            paths.add(path)
    return paths


def project(obj: dict, tree: dict) -> Any:
    """The part of `obj` that a fieldsV1 tree names (what its manager applied)."""
    out: dict = {}
    for element, child in tree.items():
        if element == "." or not element.startswith("f:"):
            continue
        key = element[2:]
        if key not in obj:
            continue
        value = obj[key]
        if not child:
            out[key] = copy.deepcopy(value)
        elif isinstance(value, dict):
            out[key] = project(value, child)
        elif isinstance(value, list):
            items = []
            for item_key, item_tree in child.items():
                name = json.loads(item_key[2:])["name"]
                item = next((i for i in value if i.get("name") == name), None)
                if item is not None:
                    items.append({"name": name, **project(item, item_tree)})
            out[key] = items
    return out
