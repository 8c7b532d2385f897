"""Render a Helm chart with pyhelm3 (`helm template --include-crds`), from vendored deps only."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from pathlib import Path
from typing import Any

from pyhelm3 import Client
from pyhelm3 import errors as helm_errors
from pyhelm3.models import Chart

from gitgate.errors import RenderError
from gitgate.model import Source, join
from gitgate.source.tree import RepoTree
from gitgate.yamlio import YamlSyntaxError, load_one

# helm 3: "template: chart/templates/x.yaml:2:18: ...", helm 4: "Error: chart/templates/x.yaml:2:18"
_TEMPLATE_LOCATION = re.compile(r"([\w.-]+/(?:charts/[\w.-]+/)*templates/[\w./-]+?):(\d+)")
_RELEASE_NAME_BAD = re.compile(r"[^a-z0-9-]+")


def helm_values_merge(base: Any, override: Any) -> Any:
    """Merge values the way helm merges several --values files: maps deep, the rest replaced,
    a null in the override removing the key."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override
    merged = dict(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif key in merged:
            merged[key] = helm_values_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def release_name_for(source: Source) -> str:
    if source.options.release_name:
        return source.options.release_name
    base = source.path.rsplit("/", 1)[-1] if source.path != "." else source.bundle_name
    return _RELEASE_NAME_BAD.sub("-", base.lower()).strip("-")[:53] or "release"


def _load_yaml(tree: RepoTree, file: str, what: str) -> Any:
    text = tree.read(file)
    if text is None:
        raise RenderError(f"{what} {file} does not exist (or leaves the repo)", file=file)
    try:
        return load_one(text)
    except YamlSyntaxError as exc:
        raise RenderError(f"{exc}", file=file, line=exc.line) from None


def chart_metadata(tree: RepoTree, source: Source) -> dict[str, Any]:
    chart_file = join(source.path, "Chart.yaml")
    metadata = _load_yaml(tree, chart_file, "chart file")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        raise RenderError("Chart.yaml must be a mapping with a name", file=chart_file, line=1)
    return metadata


def check_dependencies(tree: RepoTree, source: Source, metadata: dict[str, Any]) -> None:
    """Every dependency must be vendored under charts/ (gitgate never downloads charts)."""
    chart_file = join(source.path, "Chart.yaml")
    charts_dir = join(source.path, "charts")
    present = {f[len(charts_dir) + 1:].split("/", 1)[0] for f in tree.files
               if f.startswith(charts_dir + "/")}
    for dep in metadata.get("dependencies") or []:
        name = str((dep or {}).get("name", ""))
        if name in present or any(p.startswith(f"{name}-") and p.endswith(".tgz")
                                  for p in present):
            continue
        raise RenderError(
            f"dependency {name!r} of {chart_file} is missing from {charts_dir}/: vendor it "
            f"(`helm dependency build {source.path}`) and commit the charts/ folder",
            file=chart_file)


def values_for(tree: RepoTree, source: Source) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in source.options.values_files:
        file = join(source.path, name)
        loaded = _load_yaml(tree, file, "values file") or {}
        if not isinstance(loaded, dict):
            raise RenderError("a values file must be a mapping", file=file, line=1)
        values = helm_values_merge(values, loaded)
    return helm_values_merge(values, source.options.values)


def _plain(value: Any) -> Any:
    """PyYAML (used by pyhelm3) turns some scalars into dates; the API sees strings."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return value


def _template_error(source: Source, exc: helm_errors.Error) -> RenderError:
    text = exc.stderr.decode(errors="replace").strip()
    match = _TEMPLATE_LOCATION.search(text)
    file, line = join(source.path, "Chart.yaml"), None
    if match:
        chart_relative = match.group(1).split("/", 1)[-1]
        file, line = join(source.path, chart_relative), int(match.group(2))
    return RenderError(f"helm template failed: {text}", file=file, line=line)


def render_helm(client: Client, tree: RepoTree, repo_root: Path,
                source: Source) -> list[object]:
    metadata = chart_metadata(tree, source)
    check_dependencies(tree, source, metadata)
    values = values_for(tree, source)
    chart = Chart(client._command, ref=(repo_root / source.path).resolve(), metadata=metadata)

    async def template() -> list[object]:
        rendered = await client.template_resources(
            chart, release_name_for(source), values, include_crds=True,
            namespace=source.options.namespace)
        return [_plain(doc) for doc in rendered if doc is not None]

    try:
        return asyncio.run(template())
    except helm_errors.Error as exc:
        raise _template_error(source, exc) from None


def make_client(helm_path: str) -> Client:
    return Client(executable=helm_path)

