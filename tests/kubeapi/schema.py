"""Validation of custom resources against their CRD's openAPIV3Schema, with kube-apiserver's
error texts (`spec.x: Required value`, `Unsupported value: ...`, `... in body should have at
least 1 items`). The subset structural schemas use: type, required, properties,
additionalProperties, items, enum, min/maxItems, min/maxLength, minimum/maximum, pattern,
nullable and x-kubernetes-int-or-string. Written here rather than with a JSON Schema library
because what the emulator must reproduce is the API server's wording, cause by cause."""

from __future__ import annotations

import json
import re
from typing import Any

Cause = dict[str, str]

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "null")


def _fits(value: Any, wanted: str) -> bool:
    if wanted == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if wanted == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _JSON_TYPES.get(wanted, object))


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return {"reason": "FieldValueInvalid", "field": path,
            "message": f"Invalid value: {_shown(value)}: {path} in body {detail}"}


def validate(value: Any, schema: dict, path: str = "") -> list[Cause]:
    """Every cause for which the API server would refuse `value`, in document order."""
    if value is None or not schema:
        return []
    if schema.get("x-kubernetes-int-or-string"):
        if not (_fits(value, "integer") or isinstance(value, str)):
            return [{"reason": "FieldValueTypeInvalid", "field": path,
                     "message": f'Invalid value: "{_type_name(value)}": {path} in body must be '
                                f'of type integer,string: "{_type_name(value)}"'}]
        return []
    wanted = schema.get("type")
    if wanted and not _fits(value, wanted):
        return [{"reason": "FieldValueTypeInvalid", "field": path,
                 "message": f'Invalid value: "{_type_name(value)}": {path} in body must be of '
                            f'type {wanted}: "{_type_name(value)}"'}]
    causes: list[Cause] = []
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_shown(v) for v in schema["enum"])
        causes.append({"reason": "FieldValueNotSupported", "field": path,
                       "message": f"Unsupported value: {_shown(value)}: supported values: "
                                  f"{supported}"})
    if isinstance(value, dict):
        causes += _object(value, schema, path)
    elif isinstance(value, list):
        causes += _array(value, schema, path)
    elif isinstance(value, str):
        causes += _string(value, schema, path)
    elif _fits(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            causes.append(_invalid(path, value,
                                   f"should be greater than or equal to {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            causes.append(_invalid(path, value,
                                   f"should be less than or equal to {schema['maximum']}"))
    return causes


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _object(value: dict, schema: dict, path: str) -> list[Cause]:
    causes = [{"reason": "FieldValueRequired", "field": _join(path, name),
               "message": "Required value"}
              for name in schema.get("required") or [] if name not in value]
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, child in value.items():
        if key in properties:
            causes += validate(child, properties[key], _join(path, key))
        elif isinstance(extra, dict):
            causes += validate(child, extra, _join(path, key))
    return causes


def _array(value: list, schema: dict, path: str) -> list[Cause]:
    causes = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(_invalid(path, len(value),
                               f"should have at least {schema['minItems']} items"))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(_invalid(path, len(value),
                               f"should have at most {schema['maxItems']} items"))
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            causes += validate(item, items, f"{path}[{index}]")
    return causes


def _string(value: str, schema: dict, path: str) -> list[Cause]:
    causes = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(_invalid(path, value, f"should be at least {schema['minLength']} chars "
                                            "long"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(_invalid(path, value, f"should be at most {schema['maxLength']} chars "
                                            "long"))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        causes.append(_invalid(path, value, f"should match '{schema['pattern']}'"))
    return causes


def message(kind: str, name: str, causes: list[Cause]) -> str:
    """`Kind.group "name" is invalid: <cause>` (several in brackets, as the API server)."""
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    shown = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return f'{kind} "{name}" is invalid: {shown}'


_SMD_TYPES = {"integer": "numeric (int or float)", "number": "numeric (int or float)",
              "string": "string", "boolean": "boolean", "object": "map", "array": "list"}


def _smd_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "numeric"
    return {str: "string", dict: "map", list: "list"}.get(type(value), type(value).__name__)


def type_mismatch(value: Any, schema: dict, path: str = "") -> str | None:
    """The first value of the wrong type or field the schema does not declare, in
    structured-merge-diff's words (`.spec.rules[id="a"].value: expected numeric (int or
    float), got string`, `.spec.nonsense: field not declared in schema`), or None."""
    if value is None or not schema or schema.get("x-kubernetes-int-or-string") or \
            schema.get("x-kubernetes-preserve-unknown-fields"):
        return None
    wanted = schema.get("type")
    if wanted and not _fits(value, wanted):
        return f"{path}: expected {_SMD_TYPES.get(wanted, wanted)}, got {_smd_name(value)}"
    if isinstance(value, dict):
        declared = schema.get("properties")
        for key, item in value.items():
            if isinstance(declared, dict) and key not in declared and not schema.get(
                    "additionalProperties"):
                # refused whatever the request's fieldValidation (kube-apiserver 1.36)
                return f"{path}.{key}: field not declared in schema"
            sub = (schema.get("properties") or {}).get(key) or schema.get(
                "additionalProperties") or {}
            found = type_mismatch(item, sub if isinstance(sub, dict) else {}, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        for index, item in enumerate(value):
            where = f"[{index}]"
            if keys and isinstance(item, dict):
                where = "[" + ",".join(f'{k}="{item.get(k)}"' for k in keys) + "]"
            found = type_mismatch(item, schema.get("items") or {}, path + where)
            if found:
                return found
    return None
