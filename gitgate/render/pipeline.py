"""Render every source of a repo: discovery, the three renderers run concurrently, then the
pure post-processing (validation, default namespace, duplicates across sources)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from gitgate.errors import GitgateError, Reason, ToolMissing
from gitgate.memo import Memo, derive
from gitgate.model import (
    Manifest,
    ObjectRef,
    Problem,
    RenderedSource,
    Source,
    SourceKind,
    join,
)
from gitgate.render import post
from gitgate.render.cache import RenderCache, cache_key
from gitgate.render.helm import make_client, render_helm
from gitgate.render.kustomize import kustomize_build
from gitgate.render.kustomize_guard import check_kustomization
from gitgate.render.rawyaml import render_raw
from gitgate.render.tools import Tools
from gitgate.source.discover import Discovery, discover
from gitgate.source.tree import RepoTree, scan_repo


@dataclass(frozen=True)
class RepoRender:
    root: Path
    tree: RepoTree
    discovery: Discovery
    rendered: tuple[RenderedSource, ...]
    warnings: tuple[Problem, ...] = ()
    memo: Memo | None = None  # the render cache's, for the stages after rendering

    @property
    def problems(self) -> tuple[Problem, ...]:
        rendered = tuple(p for r in self.rendered for p in r.problems)
        return tuple(p for p in self.discovery.problems if p not in rendered) + rendered


def default_workers() -> int:
    return max(2, min(8, (os.cpu_count() or 2) * 2))


def _render_documents(source: Source, tree: RepoTree, root: Path, tools: Tools | None,
                      helm_client: Callable[[], object]) -> list[object]:
    """The documents a helm or kustomize source renders to (raises RenderError/ToolMissing)."""
    if tools is None:
        raise ToolMissing("helm and kustomize are needed to render this source")
    if source.kind is SourceKind.HELM:
        return render_helm(helm_client(), tree, root, source)  # type: ignore[arg-type]
    folder = join(source.path, source.options.kustomize_dir or ".").removesuffix("/.")
    check_kustomization(tree, folder)
    return kustomize_build(tools.kustomize, root / folder, display=folder)


def render_source(source: Source, tree: RepoTree, root: Path, tools: Tools | None,
                  helm_client: Callable[[], object]) -> RenderedSource:
    """Render one source; any failure becomes a Problem naming the file, never an exception."""
    link = tree.escape_from(source.path)
    if link:
        return RenderedSource(source, (), (Problem(
            source.path, f"symlink {link} points outside the repo (or nowhere), and "
            f"{source.path} reaches it; replace it with the file itself", link),))
    if source.kind is SourceKind.RAW:
        raw_objects, raw_problems = render_raw(source, tree)
        return RenderedSource(source, tuple(raw_objects) if not raw_problems else (),
                              tuple(raw_problems))
    try:
        documents = post.expand_lists(_render_documents(source, tree, root, tools, helm_client))
    except GitgateError as exc:
        return RenderedSource(source, (), (Problem(source.path, exc.message, exc.file, exc.line,
                                                   exc.reason),))
    objects: list[Manifest] = []
    problems: list[Problem] = []
    for index, doc in enumerate(documents):
        reason = post.invalid_reason(doc)
        if reason:
            problems.append(Problem(source.path, f"rendered document #{index + 1}: {reason}",
                                    source.path))
        else:
            objects.append(doc)  # type: ignore[arg-type]
    return RenderedSource(source, tuple(objects) if not problems else (), tuple(problems))


def _lazy_helm_client(tools: Tools | None) -> Callable[[], object]:
    cache: list[object] = []
    lock = threading.Lock()

    def get() -> object:
        with lock:
            if not cache and tools is not None:
                cache.append(make_client(tools.helm))
            return cache[0]
    return get


def finish(rendered: list[RenderedSource], memo: Memo | None = None,
           ) -> tuple[list[RenderedSource], list[Problem]]:
    """Pure: default namespaces (CRD scopes from the whole repo), then duplicates across sources.

    A source holding an object that another source also renders fails, and so does the other:
    gitgate cannot tell which one is meant. With a `memo`, a source the render cache handed
    back is finished as it was in the last pass (unless the repo's CRDs changed).
    """
    crds: dict[tuple[str, str], bool] = {}
    for result in rendered:
        crds.update(derive(memo, "crds", result, (), partial(post.crd_scopes, result.objects)))
    scopes = tuple(sorted(crds.items()))
    warnings: list[Problem] = []
    placed: list[RenderedSource] = []
    for result in rendered:
        if result.failed:
            placed.append(result)
            continue
        done, notes = derive(memo, "placed", result, scopes, partial(_placed, result, crds))
        warnings += notes
        placed.append(done)
    owners: dict[ObjectRef, list[str]] = {}
    for result in placed:
        refs = derive(memo, "refs", result, (), partial(_refs, result))
        for ref in refs:
            owners.setdefault(ref, []).append(result.source.path)
    clashes: dict[str, list[Problem]] = {}
    for ref, paths in sorted((r, p) for r, p in owners.items() if len(p) > 1):
        for path in paths:
            others = ", ".join(p for p in paths if p != path)
            clashes.setdefault(path, []).append(Problem(
                path, f"{ref} is also rendered by {others}; an object must come from one source",
                path, None, Reason.DUPLICATE_OBJECT))
    final = [replace(r, objects=(), problems=r.problems + tuple(clashes[r.source.path]))
             if r.source.path in clashes else r for r in placed]
    return final, warnings


def _refs(result: RenderedSource) -> frozenset[ObjectRef]:
    return frozenset(ObjectRef.of(o) for o in result.objects)


def _placed(result: RenderedSource, crds: dict[tuple[str, str], bool],
            ) -> tuple[RenderedSource, list[Problem]]:
    """The source with generated names and default namespaces, and a warning per unknown
    kind."""
    objects, notes = post.default_namespace(post.named_generated(result.objects),
                                            result.source.options.namespace or "default", crds)
    warnings = [Problem(result.source.path, n, result.source.path, None, Reason.UNKNOWN_KIND)
                for n in notes]
    return replace(result, objects=tuple(objects)), warnings


def render_repo(root: Path, tools: Tools | None, *, workers: int | None = None,
                only: Callable[[Source], bool] | None = None,
                cache: RenderCache | None = None) -> RepoRender:
    """Render every source of the repo at `root`. With a `cache`, a source whose inputs did
    not change since the last call is not rendered again."""
    root = root.resolve()
    tree = scan_repo(root)
    discovery = discover(tree)
    sources = [s for s in discovery.sources if only is None or only(s)]
    helm_client = _lazy_helm_client(tools)
    config_problems: dict[str, list[Problem]] = {}
    for problem in discovery.problems:
        config_problems.setdefault(problem.source, []).append(problem)

    def timed_render(source: Source) -> RenderedSource:
        started = time.monotonic()
        try:
            rendered = render_source(source, tree, root, tools, helm_client)
        except Exception as exc:  # a bug must fail this source only, never the whole pass
            rendered = RenderedSource(source, (), (Problem(
                source.path, f"unexpected {type(exc).__name__} while rendering this source "
                "(a gitgate bug: please report it with the source's files)", source.path,
                None, Reason.INTERNAL_ERROR),))
        return replace(rendered, seconds=time.monotonic() - started)

    def render_one(source: Source, key: str | None) -> RenderedSource:
        rendered = timed_render(source)
        if cache is not None:
            cache.put(key, rendered)
        return rendered

    # keys and lookups are quick and serial; only what must be rendered goes to the pool
    # (a pool task per cached source costs more in thread hand-offs than the lookup itself)
    if cache is not None:
        cache.start_round()
    results: list[RenderedSource | None] = []
    keys: list[str | None] = []
    for source in sources:
        key = None
        if source.path in config_problems:
            found: RenderedSource | None = RenderedSource(
                source, (), tuple(config_problems[source.path]))
        elif cache is not None:
            key = cache_key(source, tree, tools)
            found = cache.get(key)
        else:
            found = None
        results.append(found)
        keys.append(key)
    missing = [i for i, found in enumerate(results) if found is None]
    if missing:
        with ThreadPoolExecutor(max_workers=min(len(missing),
                                                workers or default_workers())) as pool:
            done = pool.map(lambda i: render_one(sources[i], keys[i]), missing)
            for index, rendered in zip(missing, done, strict=True):
                results[index] = rendered
    if cache is not None:
        cache.end_round()
    memo = cache.memo if cache is not None else None
    final, warnings = finish([r for r in results if r is not None], memo)
    return RepoRender(root, tree, discovery, tuple(final), tuple(warnings), memo)
