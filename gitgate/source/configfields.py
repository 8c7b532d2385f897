"""The fields of gitgate's configuration files read one way everywhere: a top-level mapping,
unknown fields refused, lists of strings, labels, optional strings and mappings (each
mistake a `ConfigError` naming the file)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gitgate.errors import ConfigError
from gitgate.model import Manifest
from gitgate.yamlio import YamlSyntaxError, load_one


def read_mapping(text: str, file: str) -> dict[str, Any]:
    try:
        data = load_one(text)
    except YamlSyntaxError as exc:
        raise ConfigError(str(exc), file=file, line=exc.line or 1) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level", file=file, line=1)
    return data



def reject_unknown(data: dict[str, Any], allowed: set[str], file: str, where: str = "") -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(
            f"unknown field(s) {', '.join(where + k for k in unknown)}; "
            f"allowed: {', '.join(sorted(allowed))}", file=file)



def entries(items: list[Any], file: str, key: str, allowed: set[str]
            ) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each item of a list of mappings with its 0-based path (`key[i]`), which must be a
    mapping of `allowed` fields only."""
    for index, item in enumerate(items):
        where = f"{key}[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be a mapping", file=file)
        reject_unknown(item, allowed, file, f"{where}.")
        yield where, item


def str_list(value: Any, file: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{key} must be a list of non-empty strings", file=file)
    return tuple(value)



def labels_of(value: Any, file: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{key} must map label names to strings", file=file)
    return {str(k): v for k, v in value.items()}



def optional_str(value: Any, file: str, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key} must be a non-empty string", file=file)
    return value



def optional_mapping(value: Any, file: str, key: str) -> Manifest | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a mapping", file=file)
    return value
