"""Server-side apply field ownership: field sets as paths, conflicts, removal, merge, and the
`fieldsV1` encoding the API server shows in managedFields.

A path is a tuple of elements: `f:<key>` for a map key, `k:{...}` for an item of a list map
(its key fields, as JSON with sorted keys: `k:{"name":"web"}`,
`k:{"containerPort":80,"protocol":"TCP"}`), and a final `.` for the membership of a keyed item.
Which lists are maps, and by which keys, is what a `ListKeys` says: the built-in resources key
containers, env, volumes by `name`, ports by port and protocol, volumeMounts by `mountPath`; a
custom resource keys the lists its schema marks `x-kubernetes-list-type: map` by its
`x-kubernetes-list-map-keys`; every other list is atomic. A LabelSelector
(`selector: {matchLabels, matchExpressions}`) is atomic.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Path = tuple[str, ...]
Names = tuple[str, ...]  # the map keys leading to a list, list items left out
MISSING = object()
_IGNORED_TOP = {"apiVersion", "kind", "status"}
_IGNORED_META = {"name", "namespace", "uid", "resourceVersion", "generation",
                 "creationTimestamp", "managedFields", "deletionTimestamp", "selfLink"}

BUILTIN_BY_NAME = {"containers", "initContainers", "ephemeralContainers", "volumes", "env"}
BUILTIN_BY_FIELDS = {"volumeMounts": ("mountPath",), "volumeDevices": ("devicePath",)}


@dataclass(frozen=True)
class ListKeys:
    """Which lists of a resource are list maps, and their keys. `builtin`: Kubernetes' own
    types; `schema`: a custom resource's list maps by the path of field names to the list."""

    builtin: bool = False
    schema: tuple[tuple[Names, tuple[str, ...]], ...] = ()

    @classmethod
    def of_schema(cls, maps: Mapping[Names, tuple[str, ...]]) -> ListKeys:
        return cls(schema=tuple(sorted(maps.items())))

    def keys(self, names: Names, items: Any) -> tuple[str, ...] | None:
        if not isinstance(items, list) or not items:
            return None
        keys = _builtin_keys(names, items) if self.builtin else dict(self.schema).get(names)
        if keys and all(isinstance(i, dict) and all(k in i for k in keys) for i in items):
            return keys
        return None


def _builtin_keys(names: Names, items: list) -> tuple[str, ...] | None:
    last = names[-1] if names else ""
    if last in BUILTIN_BY_NAME:
        return ("name",)
    if last in BUILTIN_BY_FIELDS:
        return BUILTIN_BY_FIELDS[last]
    if last == "ports" and all(isinstance(i, dict) for i in items):
        if all("containerPort" in i for i in items):
            return ("containerPort", "protocol")
        if all("port" in i for i in items):
            return ("port", "protocol")
    return None


BUILTIN = ListKeys(builtin=True)
ATOMIC = ListKeys()


def list_maps_of(schema: dict, names: Names = ()) -> dict[Names, tuple[str, ...]]:
    """The list maps an openAPIV3Schema declares, by the path of field names to each."""
    found: dict[Names, tuple[str, ...]] = {}
    if schema.get("x-kubernetes-list-type") == "map":
        found[names] = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    for key, child in (schema.get("properties") or {}).items():
        found.update(list_maps_of(child, (*names, key)))
    if isinstance(schema.get("items"), dict):
        found.update(list_maps_of(schema["items"], names))
    return found


def with_default_protocols(obj: Any, names: Names = ()) -> Any:
    """Ports as the API server defaults them before keying them: `protocol: TCP`."""
    if isinstance(obj, dict):
        return {k: with_default_protocols(v, (*names, k)) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [with_default_protocols(i, names) for i in obj]
        if names and names[-1] == "ports":
            items = [{**i, "protocol": i.get("protocol", "TCP")}
                     if isinstance(i, dict) and ("containerPort" in i or "port" in i) else i
                     for i in items]
        return items
    return obj


def item_element(item: dict, keys: tuple[str, ...]) -> str:
    return "k:" + json.dumps({k: item[k] for k in keys}, separators=(",", ":"), sort_keys=True)


def _matches(item: Any, element: str) -> bool:
    wanted = json.loads(element[2:])
    return isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())


def _atomic_map(key: str | None, value: Any) -> bool:
    return (key == "selector" and isinstance(value, dict) and bool(value)
            and set(value) <= {"matchLabels", "matchExpressions"})


def _walk(value: Any, prefix: Path, names: Names, lists: ListKeys,
          deduced: bool = False) -> set[Path]:
    key = names[-1] if names else None
    if isinstance(value, dict) and not _atomic_map(key, value):
        if not value:
            return {prefix}
        out: set[Path] = {(*prefix, ".")} if deduced and prefix else set()
        for child_key, child in value.items():
            out |= _walk(child, (*prefix, f"f:{child_key}"), (*names, child_key), lists,
                         deduced)
        return out
    keys = lists.keys(names, value)
    if keys:
        out = set()
        for item in value:
            item_path = (*prefix, item_element(item, keys))
            out.add((*item_path, "."))
            out |= _walk(item, item_path, names, lists)
        return out
    return {prefix}


def field_set(obj: dict, lists: ListKeys = BUILTIN, deduced: bool = False) -> set[Path]:
    """The fields an applied configuration sets (identity and status fields excluded).
    `deduced`: a custom resource without a structural schema (preserve-unknown-fields), whose
    maps are owned as a whole too (a `.` entry), as the API server records them."""
    body = {k: v for k, v in obj.items() if k not in _IGNORED_TOP}
    meta = {k: v for k, v in (body.pop("metadata", None) or {}).items() if k not in _IGNORED_META}
    if meta:
        body["metadata"] = meta
    return _walk(body, (), (), lists, deduced) if body else set()


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
            if not isinstance(current, list):
                return MISSING
            current = next((i for i in current if _matches(i, element)), MISSING)
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
            item = next((i for i in current or [] if _matches(i, element)), None)
            if item is None:
                return
            parents.append((current, element))
            current = item
    last = path[-1]
    if last == "." and (not parents or parents[-1][1].startswith("f:")):
        return  # a map's own membership: its fields go one by one, empty maps are dropped
    if last == ".":
        container, element = parents[-1]
        container[:] = [i for i in container if not _matches(i, element)]
    elif last.startswith("f:") and isinstance(current, dict):
        current.pop(last[2:], None)
    for container, element in reversed(parents):
        if element.startswith("f:"):
            child = container.get(element[2:])
            if child in ({}, []):
                container.pop(element[2:], None)


def merge(live: Any, config: Any, lists: ListKeys = BUILTIN, names: Names = ()) -> Any:
    """Apply `config` over `live`: maps merge, list maps merge by their keys, the rest is
    replaced."""
    key = names[-1] if names else None
    if isinstance(live, dict) and isinstance(config, dict) and not _atomic_map(key, config):
        out = dict(live)
        for child_key, value in config.items():
            out[child_key] = (merge(live[child_key], value, lists, (*names, child_key))
                              if child_key in live else copy.deepcopy(value))
        return out
    keys = lists.keys(names, config)
    if keys and lists.keys(names, live) == keys:
        by_key = {item_element(i, keys): i for i in live}
        out_list = [merge(by_key[item_element(i, keys)], i, lists, names)
                    if item_element(i, keys) in by_key else copy.deepcopy(i) for i in config]
        configured = {item_element(i, keys) for i in config}
        return [i for i in live if item_element(i, keys) not in configured] + out_list
    return copy.deepcopy(config)


def covered(path: Path, owned: set[Path]) -> bool:
    """Whether `path` or anything below it is owned."""
    return any(p[:len(path)] == path for p in owned)


def describe(path: Path) -> str:
    """`.data.x`, `.spec.template.spec.containers[name="web"].image`,
    `.spec.ports[port=80,protocol="TCP"]`."""
    out = ""
    for element in path:
        if element == ".":
            continue
        if element.startswith("f:"):
            out += "." + element[2:]
        else:
            out += "[" + ",".join(f"{k}={json.dumps(v)}"
                                  for k, v in json.loads(element[2:]).items()) + "]"
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
                item = next((i for i in value if _matches(i, item_key)), None)
                if item is not None:
                    items.append({**json.loads(item_key[2:]), **project(item, item_tree)})
            out[key] = items
    return out
