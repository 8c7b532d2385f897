"""One copy of each short string that recurs across objects. Pure.

A parser makes a new string for every key and value it reads, so 50,000 rendered objects
hold 50,000 copies of "apiVersion", "metadata", "apps/v1" and their namespace's name, and
5,000 records hold 50,000 copies of "ConfigMap". `sys.intern` hands back the one copy every
equal string shares; CPython frees it again when nothing else holds it. Long strings (a
hash, a message, a file's content) seldom recur and are kept as they are: interning them
would only add each to the interpreter's table."""

from __future__ import annotations

import sys
from typing import Any

SHARED_MAX = 48  # characters; a sha256 in hex is 64, so hashes are never interned


def shared(text: str) -> str:
    """`text`, as the copy every equal short string shares."""
    return sys.intern(text) if len(text) <= SHARED_MAX and type(text) is str else text


def shared_tree(value: Any) -> Any:
    """A decoded JSON or YAML value with its keys and short string values shared (new
    dicts and lists; other values are kept)."""
    if isinstance(value, dict):
        return {shared(str(k)): shared_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shared_tree(v) for v in value]
    if type(value) is str:
        return shared(value)
    return value
