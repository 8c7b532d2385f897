"""Read and write `chart.lock.yaml`: the charts a source fetches (its published chart, the
chart repository and `oci://` dependencies of its Chart.yaml), each resolved once by
`gitgate lock` to one version and the sha256 of its archive. Pure over text."""

from __future__ import annotations

import re
from typing import Any

from gitgate.errors import ConfigError
from gitgate.model.chartspec import (
    OCI,
    PUBLISHED,
    ChartRef,
    LockedChart,
    is_chart_repository,
    url_parts,
)
from gitgate.yamlio import YamlSyntaxError, dump_one, key_line, load_one

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_KEYS = {"dependency", "repo", "chart", "requested", "version", "digest"}
HEADER = ("# Written by `gitgate lock`: the charts this source fetches, each pinned to one "
          "version and\n# the sha256 of its archive. Commit it; a pass fetches nothing else.\n")


def parse_chart_lock(text: str, file: str) -> tuple[LockedChart, ...]:
    """The entries of a lock file; ConfigError naming the line of a bad one."""
    try:
        data = load_one(text)
    except YamlSyntaxError as exc:
        raise ConfigError(str(exc), file=file, line=exc.line or 1) from None
    entries = (data or {}).get("charts") if isinstance(data, dict) else None
    if not isinstance(data, dict) or set(data) - {"charts"} or not isinstance(entries, list):
        raise ConfigError("a chart lock is {charts: [{repo, chart, requested, version, "
                          "digest}]}: run `gitgate lock` to write it", file=file, line=1)
    found: list[LockedChart] = []
    for index, item in enumerate(entries):
        line = key_line(text, ("charts", str(index))) or 1
        if not isinstance(item, dict) or set(item) - _KEYS or not all(
                isinstance(item.get(k), str) and item[k] for k in _KEYS - {"dependency"}):
            raise ConfigError(f"charts[{index + 1}] must be {{dependency, repo, chart, "
                              "requested, version, digest}}: run `gitgate lock` to write it "
                              "again", file=file, line=line)
        if not _DIGEST.match(item["digest"]):
            raise ConfigError(f"charts[{index + 1}].digest must be sha256:<64 hex digits>",
                              file=file, line=line)
        if url_parts(item["repo"]) is None:
            raise ConfigError(f"charts[{index + 1}].repo must be an https:// or oci:// URL "
                              "(http:// only on 127.0.0.1 or [::1])",
                              file=file, line=line)
        dependency = str(item.get("dependency") or PUBLISHED)
        if any(e.dependency == dependency for e in found):
            raise ConfigError(f"charts[{index + 1}] locks {dependency or 'the chart'} a "
                              "second time", file=file, line=line)
        found.append(LockedChart(dependency, ChartRef(item["repo"], item["chart"],
                                                      item["requested"]),
                                 item["version"], item["digest"]))
    return tuple(found)


def format_chart_lock(entries: tuple[LockedChart, ...]) -> str:
    """The lock file's text, entries in a stable order (the published chart first)."""
    items: list[dict[str, Any]] = []
    for entry in sorted(entries, key=lambda e: e.dependency):
        item: dict[str, Any] = {}
        if entry.dependency != PUBLISHED:
            item["dependency"] = entry.dependency
        item.update(repo=entry.ref.repo, chart=entry.ref.chart, requested=entry.ref.version,
                    version=entry.version, digest=entry.digest)
        items.append(item)
    return HEADER + dump_one({"charts": items})


def lock_line(text: str | None, dependency: str, entries: tuple[LockedChart, ...]) -> int | None:
    """The line of a lock file where `dependency`'s entry starts."""
    for index, entry in enumerate(entries):
        if entry.dependency == dependency:
            return key_line(text or "", ("charts", str(index)))
    return None


def is_remote(repository: str) -> bool:
    """A Chart.yaml dependency's `repository` that gitgate fetches from: a chart repository
    (https, or http on loopback) or a registry (oci). `file://`, an alias (`@name`) and
    none are not."""
    return repository.startswith(OCI) or is_chart_repository(repository)
