"""Render a Helm chart with pyhelm3 (`helm template --include-crds`): a chart committed in the
repo (its dependencies vendored, or fetched and locked), or a published chart, fetched and
locked (`charts.stage`). Either way helm reads local files only.

pyhelm3's Command builds and runs helm; gitgate's subclass runs it through render.sandbox (no
plugins, no network, time and output limits, never through a shell), puts `--` before the
positional arguments, and parses the output with the guarded YAML loader instead of PyYAML.
Release names and namespaces are validated first, so none can be read as a flag."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyhelm3 import Command
from pyhelm3 import errors as helm_errors

from gitgate.charts.stage import Fetched
from gitgate.errors import RenderError
from gitgate.model import Source, join
from gitgate.model.chartspec import PUBLISHED
from gitgate.render.helm_schema import check_archive_schemas
from gitgate.render.sandbox import Limits, run_tool
from gitgate.source.tree import RepoTree
from gitgate.yamlio import YamlLimits, YamlSyntaxError, load_documents, load_one

# helm 3: "template: chart/templates/x.yaml:2:18: ...", helm 4: "Error: chart/templates/x.yaml:2:18"
_TEMPLATE_LOCATION = re.compile(r"([\w.-]+/(?:charts/[\w.-]+/)*templates/[\w./-]+?):(\d+)")
_RELEASE_NAME_BAD = re.compile(r"[^a-z0-9-]+")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


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
        name = source.options.release_name
        if not _DNS_LABEL.match(name) or len(name) > 53:
            raise RenderError(f"releaseName {name!r} must be lowercase letters, digits and "
                              "'-', start and end with a letter or digit, at most 53 "
                              "characters", file=join(source.path, "bundle.yaml"))
        return name
    base = source.path.rsplit("/", 1)[-1] if source.path != "." else source.bundle_name
    return _RELEASE_NAME_BAD.sub("-", base.lower()).strip("-")[:53] or "release"


def namespace_for(source: Source) -> str | None:
    namespace = source.options.namespace
    if namespace is not None and (not _DNS_LABEL.match(namespace) or len(namespace) > 63):
        raise RenderError(f"namespace {namespace!r} is not a valid namespace name (lowercase "
                          "letters, digits and '-', at most 63 characters)",
                          file=join(source.path, "bundle.yaml"))
    return namespace


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


def check_dependencies(tree: RepoTree, source: Source, metadata: dict[str, Any],
                       fetched: Sequence[Fetched] = ()) -> None:
    """Every dependency must be vendored under charts/, or fetched as its lock says."""
    chart_file = join(source.path, "Chart.yaml")
    charts_dir = join(source.path, "charts")
    present = {f[len(charts_dir) + 1:].split("/", 1)[0] for f in tree.under(charts_dir)
               if f != charts_dir}
    for dep in metadata.get("dependencies") or []:
        name = str((dep or {}).get("name", ""))
        alias = str((dep or {}).get("alias") or name)
        if any(f.locked.dependency == alias for f in fetched):
            continue
        if name in present or any(p.startswith(f"{name}-") and p.endswith(".tgz")
                                  for p in present):
            continue
        raise RenderError(
            f"dependency {name!r} of {chart_file} is missing from {charts_dir}/: vendor it "
            f"(`helm dependency build {source.path}`) and commit the charts/ folder, or name "
            "its chart repository or oci:// registry and lock it (`gitgate lock`)",
            file=chart_file)


def values_for(tree: RepoTree, source: Source) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in source.options.values_files:
        file = join(source.path, name)
        loaded = _load_yaml(tree, file, "values file") or {}
        if not isinstance(loaded, dict):
            raise RenderError("a values file must be a mapping", file=file, line=1)
        values = helm_values_merge(values, loaded)
    merged: dict[str, Any] = helm_values_merge(values, source.options.values)
    return merged


def _template_error(source: Source, exc: helm_errors.Error) -> RenderError:
    text = exc.stderr.decode(errors="replace").strip()
    match = _TEMPLATE_LOCATION.search(text)
    file, line = join(source.path, "Chart.yaml"), None
    if source.options.chart is not None:  # the chart is not in the repo: its bundle.yaml
        file, match = join(source.path, "bundle.yaml"), None
    if match:
        chart_relative = match.group(1).split("/", 1)[-1]
        file, line = join(source.path, chart_relative), int(match.group(2))
    return RenderError(f"helm template failed: {text}", file=file, line=line)


def check_chart_folder(tree: RepoTree, source: Source) -> None:
    """helm loads every file below the chart's folder, following folder links: none of them
    may be the checkout's `.git` (a chart at the repo root, or a link there to the root)."""
    if tree.git_dir and "." in tree.reached(source.path):
        raise RenderError(
            "helm loads every file in the chart's folder, and that takes in the checkout's "
            ".git folder at the repo root (its config may hold the credentials gitgate fetches "
            "with); move the chart into a folder of its own", file=join(source.path,
                                                                          "Chart.yaml"))


def _archive(fetched: Fetched) -> bytes:
    """A fetched chart's archive, checked once more against its locked digest."""
    try:
        data = fetched.archive.read_bytes()
    except OSError:
        data = b""
    if hashlib.sha256(data).hexdigest() != fetched.locked.hex:
        raise RenderError(f"the fetched archive of {fetched.locked.ref.where} "
                          f"{fetched.locked.version} is not the locked one (the chart cache "
                          "changed under gitgate); it is fetched again on the next pass",
                          file=str(fetched.archive))
    check_archive_schemas(f"{fetched.locked.ref.where}-{fetched.locked.version}.tgz", data)
    return data


def _with_dependencies(tree: RepoTree, source: Source, fetched: Sequence[Fetched],
                       scratch: Path) -> Path:
    """A copy of the committed chart with its fetched dependencies in charts/: helm reads
    this folder, never the network (the files are copied as the repo's tree reads them)."""
    chart = scratch / "chart"
    for file in tree.under(source.path):
        data = tree.read_bytes(file)
        if data is None:
            continue
        target = chart / file[len(source.path) + 1:] if source.path != "." else chart / file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (chart / "charts").mkdir(parents=True, exist_ok=True)
    for item in fetched:
        name = f"{item.locked.ref.chart}-{item.locked.version}.tgz"
        (chart / "charts" / name).write_bytes(_archive(item))
    return chart


def render_helm(helm: SandboxedHelm, tree: RepoTree, repo_root: Path,
                source: Source, fetched: Sequence[Fetched] = ()) -> list[object]:
    values = values_for(tree, source)
    release, namespace = release_name_for(source), namespace_for(source)
    published = next((f for f in fetched if f.locked.dependency == PUBLISHED), None)
    with tempfile.TemporaryDirectory(prefix="gitgate-chart-") as scratch:
        if source.options.chart is not None:
            if published is None:
                raise RenderError(f"{source.options.chart.where} was not fetched",
                                  file=join(source.path, "bundle.yaml"))
            _archive(published)
            chart = published.archive
        else:
            check_chart_folder(tree, source)
            metadata = chart_metadata(tree, source)
            check_dependencies(tree, source, metadata, fetched)
            chart = ((repo_root / source.path).resolve() if not fetched
                     else _with_dependencies(tree, source, fetched, Path(scratch)))
        try:
            text = asyncio.run(helm.template_text(release, chart, values, namespace=namespace,
                                                  display=source.path))
        except helm_errors.Error as exc:
            raise _template_error(source, exc) from None
    try:
        return [doc.data for doc in load_documents(
            text, limits=YamlLimits.from_env(max_bytes=helm.limits.max_output))]
    except YamlSyntaxError as exc:
        raise RenderError(f"helm's output for {source.path} is not YAML: {exc}",
                          file=join(source.path, "Chart.yaml")) from None


class SandboxedHelm(Command):
    """pyhelm3's helm Command, run sandboxed (see the module docstring)."""

    def __init__(self, executable: str, limits: Limits | None = None):
        super().__init__(executable=executable)
        self.limits = limits or Limits.from_env()

    async def run(self, command: list[Any], input: bytes | None = None) -> bytes:
        return await self._run(command, input, "helm")

    async def _run(self, command: list[Any], input: bytes | None, display: str) -> bytes:
        argv = [self._executable, *(str(part) for part in command)]
        chart: Path | None = next((p for p in command if isinstance(p, Path)), None)
        folder = chart if chart is None or chart.is_dir() else chart.parent
        done = await asyncio.to_thread(run_tool, argv, cwd=folder or Path.cwd(),
                                       display=display, tool="helm", stdin=input,
                                       limits=self.limits)
        if done.returncode != 0:
            raise helm_errors.Error(done.returncode, done.stdout,
                                    done.stderr.encode("utf-8", "replace"))
        return done.stdout

    async def template_text(self, release: str, chart: Path, values: dict[str, Any], *,
                            namespace: str | None, display: str) -> str:
        """`helm template` of a chart folder as text: flags first, then `--`, then the
        release name and the chart (neither can be read as a flag)."""
        command: list[Any] = ["template", "--include-crds", "--values", "-"]
        if namespace:
            command += ["--namespace", namespace]
        command += ["--", release, chart]
        output = await self._run(command, json.dumps(values).encode(), display)
        try:
            return output.decode("utf-8")
        except UnicodeDecodeError:
            raise RenderError(f"helm's output for {display} is not UTF-8", file=display) from None


def make_client(helm_path: str) -> SandboxedHelm:
    return SandboxedHelm(helm_path)
