"""Refuse a chart whose values schema would make helm read a file or reach the network.

helm validates values against each chart's `values.schema.json` (subcharts included, vendored
as folders or `.tgz` archives) and resolves every `$ref` in it: `file://` reads any file of the
host, `http://` is fetched (loopback is not stopped by the dead proxy). gitgate lets a schema
refer only into itself (`#/...`), and its `$schema` be one of the drafts helm ships; anything
else fails the chart, naming the file and the JSON path, before helm runs. Pure over the repo's
bytes."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from typing import Any

from gitgate.errors import RenderError
from gitgate.source.tree import RepoTree

SCHEMA_FILE = "values.schema.json"
REFERENCE_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
# the meta-schemas helm's JSON Schema library knows without loading anything
KNOWN_DRAFTS = frozenset(
    f"{scheme}://json-schema.org/{draft}{end}" for scheme in ("http", "https")
    for draft in ("draft-04/schema", "draft-06/schema", "draft-07/schema",
                  "draft/2019-09/schema", "draft/2020-12/schema") for end in ("", "#"))
MAX_ARCHIVE_BYTES = 16 << 20  # a vendored subchart larger than this is not read for schemas
MAX_SCHEMA_BYTES = 4 << 20
MAX_NESTING = 4  # subcharts of subcharts


def _remote(value: object, key: str) -> bool:
    if key == "$schema":
        return value not in KNOWN_DRAFTS
    return not (isinstance(value, str) and value.startswith("#"))


def reference_problems(schema: Any, path: str = "") -> Iterator[str]:
    """`where: key value` for every reference that leaves the schema document."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if (key in REFERENCE_KEYS or key == "$schema") and _remote(value, key):
                yield f"{path or '/'}: {key} {str(value)[:120]!r}"
            elif key == "$id" and path and not str(value).startswith("#"):
                # a nested $id is a base for the references below it (the root's names
                # the document itself)
                yield f"{path}: $id {str(value)[:120]!r}"
            else:
                yield from reference_problems(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from reference_problems(item, f"{path}/{index}")


def _schemas(tree: RepoTree, chart: str) -> Iterator[tuple[str, bytes]]:
    """(display name, bytes) of every values schema helm would read for the chart."""
    for file in tree.under(chart):
        name = file.rsplit("/", 1)[-1]
        if name == SCHEMA_FILE:
            yield file, tree.read_bytes(file) or b""
        elif name.endswith((".tgz", ".tar.gz")):
            yield from _archived(file, tree.read_bytes(file) or b"")


def _archived(file: str, data: bytes, depth: int = 0) -> Iterator[tuple[str, bytes]]:
    if depth > MAX_NESTING:
        raise RenderError(f"{file} nests chart archives more than {MAX_NESTING} deep",
                          file=file.split("!", 1)[0])
    if len(data) > MAX_ARCHIVE_BYTES:
        raise RenderError(f"{file} is larger than {MAX_ARCHIVE_BYTES >> 20} MiB: gitgate does "
                          "not vendor such subcharts", file=file)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive:
                if member.isfile() and member.name.rsplit("/", 1)[-1] == SCHEMA_FILE:
                    if member.size > MAX_SCHEMA_BYTES:
                        raise RenderError(f"{file}!{member.name} is too large", file=file)
                    handle = archive.extractfile(member)
                    yield f"{file}!{member.name}", handle.read() if handle else b""
                elif member.isfile() and member.name.endswith((".tgz", ".tar.gz")):
                    handle = archive.extractfile(member)
                    yield from _archived(f"{file}!{member.name}",
                                         handle.read() if handle else b"", depth + 1)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise RenderError(f"{file} is not a readable chart archive ({exc})", file=file) from None


def check_chart_schemas(tree: RepoTree, chart: str) -> None:
    """RenderError naming the schema and the reference when any schema of the chart reaches
    out of itself, or cannot be read as JSON (helm would refuse it too)."""
    for name, data in _schemas(tree, chart):
        _check_schema(name, data)


def _check_schema(name: str, data: bytes) -> None:
    if len(data) > MAX_SCHEMA_BYTES:
        raise RenderError(f"{name} is larger than {MAX_SCHEMA_BYTES >> 20} MiB", file=name)
    try:
        schema = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RenderError(f"{name} is not JSON ({exc.__class__.__name__}); fix the "
                          "schema", file=name) from None
    found = list(reference_problems(schema))
    if found:
        raise RenderError(
            f"{name} refers outside itself ({'; '.join(found[:3])}): helm would read a "
            "file of the host or fetch a URL to resolve it; inline the referenced schema "
            "(references may only point into the same file: '#/...')", file=name)


def check_archive_schemas(display: str, data: bytes) -> None:
    """`check_chart_schemas` for a chart archive fetched from elsewhere (`display` names it)."""
    for name, schema_data in _archived(display, data):
        _check_schema(name, schema_data)
