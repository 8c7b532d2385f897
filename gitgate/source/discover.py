"""Decide which folders of a repo are sources, and of which kind. Pure over a RepoTree."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from gitgate.errors import GitgateError
from gitgate.model import Problem, Source, SourceKind, is_under, join, parent_dir
from gitgate.model.chartspec import CHART_LOCK
from gitgate.source.chartlock import parse_chart_lock
from gitgate.source.config import (
    BUNDLE_CONFIG,
    REPO_CONFIG,
    RepoConfig,
    parse_bundle_options,
    parse_repo_config,
)
from gitgate.source.tree import RepoTree

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
PAUSE_FILE = "PAUSE"
_PAUSE_ENDINGS = ("", ".txt", ".md")


def is_pause_name(name: str) -> bool:
    """`PAUSE`, or a careless spelling of it an on-call person may type in an incident
    (`pause`, `Pause`, `PAUSE.txt`, `pause.md`, blanks around it): each pauses its folder,
    since a pause meant and not honoured lets a change out. A `pause.yaml` is a manifest."""
    lower = name.strip().lower()
    return any(lower == "pause" + ending for ending in _PAUSE_ENDINGS)


def pause_text(name: str, text: str) -> str:
    """A pause file's reason: its text, or the default; a careless spelling says its name."""
    reason = text.strip() or DEFAULT_PAUSE_REASON
    return reason if name == PAUSE_FILE else f"{reason} (file {name!r}, read as {PAUSE_FILE})"


def pause_covering(folder: str, pauses: Mapping[str, str]) -> str | None:
    """The folder whose pause file holds `folder`: its own, else the nearest one above it (a
    `PAUSE` holds every source at or below its folder: one put above the sources is meant for
    them all), else None."""
    while folder not in pauses:
        if folder == ".":
            return None
        folder = parent_dir(folder)
    return folder


def paused_on_disk(root: Path, folder: str) -> bool:
    """Whether a pause file of any spelling stands in `folder` of the checkout at `root`, or
    in a folder above it."""
    while True:
        if has_pause_file(root / folder):
            return True
        if folder == ".":
            return False
        folder = parent_dir(folder)


def has_pause_file(folder: Path) -> bool:
    """Whether a folder on disk holds a pause file of any spelling."""
    try:
        return any(is_pause_name(entry.name) for entry in folder.iterdir())
    except OSError:
        return False
DEFAULT_PAUSE_REASON = "paused by a PAUSE file"


@dataclass(frozen=True)
class Discovery:
    config: RepoConfig
    sources: tuple[Source, ...]
    problems: tuple[Problem, ...] = ()
    source_dirs: frozenset[str] = field(default_factory=frozenset)


def bundle_name_for(path: str) -> str:
    """`apps/Payments_v2` -> `apps-payments-v2`: a name fit for Kubernetes object names."""
    if path == ".":
        return "root"
    return re.sub(r"[^a-z0-9.-]+", "-", path.lower().replace("/", "-")).strip("-.") or "root"


def _files_by_dir(files: frozenset[str]) -> dict[str, set[str]]:
    by_dir: dict[str, set[str]] = {}
    for file in files:
        by_dir.setdefault(parent_dir(file), set()).add(posixpath.basename(file))
    return by_dir


def _all_dirs(files: frozenset[str]) -> set[str]:
    dirs = {"."}
    for file in files:
        folder = parent_dir(file)
        while folder not in dirs:
            dirs.add(folder)
            folder = parent_dir(folder)
    return dirs


def _inside(folder: str, leaves: set[str]) -> bool:
    """`folder` is a leaf or below one (a walk up its parents, not over every leaf)."""
    while True:
        if folder in leaves:
            return True
        if folder == ".":
            return False
        folder = parent_dir(folder)


def _hidden(folder: str) -> bool:
    return any(part.startswith(".") for part in folder.split("/") if part != ".")


def discover(tree: RepoTree) -> Discovery:
    """Find every source of the repo; a bad bundle.yaml is a problem for that folder only."""
    try:
        config = parse_repo_config(tree.read(REPO_CONFIG))
    except GitgateError as exc:
        return Discovery(RepoConfig(), (), (Problem(".", exc.message, REPO_CONFIG, exc.line,
                                                     exc.reason),))
    # a link leading out of the repo counts as a file here: its folder stays a source (and
    # fails to render, naming the link) instead of vanishing and having its objects pruned
    listed = tree.files | tree.escaping_links
    by_dir = _files_by_dir(listed)
    dirs = sorted(d for d in _all_dirs(listed)
                  if any(is_under(d, p) for p in config.paths) and not _hidden(d)
                  and not is_under(d, config.gates_path))
    sources: list[Source] = []
    problems: list[Problem] = []
    paused = pause_files(tree)
    leaves: set[str] = set()  # chart and kustomize folders: nothing below is a source
    for folder in dirs:
        if _inside(folder, leaves):
            continue
        names = by_dir.get(folder, set())
        kind = _kind_of(folder, names, tree)
        if kind is None:
            continue
        if kind is not SourceKind.RAW:
            leaves.add(folder)
        bundle_file = join(folder, BUNDLE_CONFIG)
        try:
            options = parse_bundle_options(tree.read(bundle_file) if BUNDLE_CONFIG in names
                                           else None, bundle_file, config)
        except GitgateError as exc:
            # The source stays (as failed) so that nothing it owns is pruned, and it keeps the
            # folders below: what it meant (a `dir:` overlay, say) is unknown, so they are not
            # sources of their own whose objects would clash. The cause is said once.
            problems.append(Problem(folder, exc.message, bundle_file, exc.line, exc.reason))
            options = parse_bundle_options(None, bundle_file, config)
            leaves.add(folder)
        if kind is SourceKind.RAW and options.kustomize_dir:
            kind = SourceKind.KUSTOMIZE
            leaves.add(folder)
        if options.chart is not None:
            if kind is not SourceKind.RAW:
                problems.append(Problem(folder, f"{bundle_file} names a published chart "
                                        "(helm:), and the folder holds a chart or a "
                                        "kustomization of its own: a source is one of them",
                                        bundle_file, None))
            kind = SourceKind.HELM
            leaves.add(folder)
        if CHART_LOCK in names and kind is SourceKind.HELM:
            lock_file = join(folder, CHART_LOCK)
            try:
                options = replace(options, locked=parse_chart_lock(
                    tree.read(lock_file) or "", lock_file))
            except GitgateError as exc:
                problems.append(Problem(folder, exc.message, lock_file, exc.line, exc.reason))
        raw_files = tuple(sorted(join(folder, n) for n in names if _is_raw_yaml(folder, n)))
        pause = None
        pause_name = next((n for n in sorted(names) if is_pause_name(n)), None)
        if pause_name is not None:
            try:
                pause = pause_text(pause_name, tree.read(join(folder, pause_name)) or "")
            except GitgateError:
                pause = pause_text(pause_name, "")  # unreadable still pauses
        above = pause_covering(folder, paused) if pause is None else None
        sources.append(Source(
            path=folder, kind=kind, options=options,
            bundle_name=options.name or bundle_name_for(folder),
            files=raw_files if kind is SourceKind.RAW else (),
            pause_reason=pause if above is None else paused[above], pause_folder=above))
    return Discovery(config, tuple(sources), tuple(problems), frozenset(s.path for s in sources))


def _is_raw_yaml(folder: str, name: str) -> bool:
    if name in (BUNDLE_CONFIG, CHART_LOCK) or (folder == "." and name == REPO_CONFIG):
        return False
    return name.endswith((".yaml", ".yml"))


def _kind_of(folder: str, names: set[str], tree: RepoTree) -> SourceKind | None:
    if "Chart.yaml" in names:
        return SourceKind.HELM
    if any(k in names for k in KUSTOMIZATION_FILES):
        return SourceKind.KUSTOMIZE
    if any(_is_raw_yaml(folder, n) for n in names) or BUNDLE_CONFIG in names:
        return SourceKind.RAW
    return None


def pause_files(tree: RepoTree) -> dict[str, str]:
    """Every `PAUSE` file of the repo, source folder or not: folder -> its reason (a link
    leaving the repo, or a file that cannot be read, still pauses)."""
    found: dict[str, str] = {}
    for file in (*tree.files, *tree.escaping_links):
        folder, _, name = file.rpartition("/")
        if not is_pause_name(name):
            continue
        folder = folder or "."
        try:
            text = (tree.read(file) or "") if file in tree.files else ""
        except GitgateError:
            text = ""
        if folder not in found or name == PAUSE_FILE:
            found[folder] = pause_text(name, text)
    return found
