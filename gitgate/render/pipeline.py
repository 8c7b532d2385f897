"""Render every source of a repo: discovery, the three renderers run concurrently, then the
pure post-processing (validation, default namespace, duplicates across sources)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from gitgate.charts.stage import ChartFetcher, Fetched, fetch_stage
from gitgate.errors import GitgateError, Reason, RenderError, ToolMissing
from gitgate.memo import Memo
from gitgate.model import (
    Manifest,
    ObjectRef,
    Problem,
    RenderedSource,
    Source,
    SourceKind,
    join,
)
from gitgate.model.claims import Holders
from gitgate.model.kindscope import ScopeTable
from gitgate.render import post, reuse
from gitgate.render.budget import Budget, source_budget, within_budget
from gitgate.render.cache import RenderCache, cache_key
from gitgate.render.helm import helm_values_merge, make_client, render_helm
from gitgate.render.helm_schema import check_chart_schemas
from gitgate.render.kustomize import kustomize_build
from gitgate.render.kustomize_guard import check_kustomization, has_kustomization
from gitgate.render.patches import PatchFailed, patched
from gitgate.render.placement import (
    Crds,
    ScopeOf,
    Summarize,
    finish_with_scopes,
    stale_summary,
    summarized_early,
    used_scopes,
)
from gitgate.render.rawyaml import render_raw
from gitgate.render.tools import Tools
from gitgate.source.config import BUNDLE_CONFIG
from gitgate.source.discover import Discovery, discover
from gitgate.source.tree import RepoTree, scan_repo
from gitgate.yamlio import key_line


@dataclass(frozen=True)
class RepoRender:
    root: Path
    tree: RepoTree
    discovery: Discovery
    rendered: tuple[RenderedSource, ...]
    warnings: tuple[Problem, ...] = ()
    memo: Memo | None = None  # the render cache's, for the stages after rendering
    scopes: ScopeTable = ScopeTable()  # how each kind's scope was judged

    @property
    def problems(self) -> tuple[Problem, ...]:
        rendered = tuple(p for r in self.rendered for p in r.problems)
        return tuple(p for p in self.discovery.problems if p not in rendered) + rendered


def default_workers() -> int:
    return max(2, min(8, (os.cpu_count() or 2) * 2))


def _render_documents(source: Source, tree: RepoTree, root: Path, tools: Tools | None,
                      helm_client: Callable[[], object],
                      fetched: tuple[Fetched, ...] = ()) -> list[object]:
    """The documents a helm or kustomize source renders to (raises RenderError/ToolMissing)."""
    if tools is None:
        raise ToolMissing("helm and kustomize are needed to render this source")
    if source.kind is SourceKind.HELM:
        check_chart_schemas(tree, source.path)  # before helm resolves any $ref
        return render_helm(helm_client(), tree, root, source,  # type: ignore[arg-type]
                           fetched)
    folder = join(source.path, source.options.kustomize_dir or ".").removesuffix("/.")
    if source.options.kustomize_dir and not has_kustomization(tree, folder):
        bundle_file = join(source.path, BUNDLE_CONFIG)
        raise RenderError(
            f"dir {source.options.kustomize_dir!r} is not a kustomize folder (no "
            f"kustomization.yaml in {folder}); fix `dir` in {bundle_file}", file=bundle_file,
            line=key_line(tree.read(bundle_file) or "", ("dir",)))
    check_kustomization(tree, folder)
    return kustomize_build(tools.kustomize, root / folder, display=folder)


def render_source(source: Source, tree: RepoTree, root: Path, tools: Tools | None,
                  helm_client: Callable[[], object],
                  budget: Budget | None = None,
                  fetched: tuple[Fetched, ...] = ()) -> RenderedSource:
    """Render one source; any failure becomes a Problem naming the file, never an exception.
    `fetched`: the charts the fetch stage put in the store for it (`charts.stage`)."""
    rendered = _rendered(source, tree, root, tools, helm_client, fetched)
    if source.options.clusters and not rendered.failed:
        rendered = _with_variants(rendered, tree, root, tools, helm_client, fetched)
    return source_budget(rendered, budget or Budget.from_env())


def _with_variants(rendered: RenderedSource, tree: RepoTree, root: Path, tools: Tools | None,
                   helm_client: Callable[[], object],
                   fetched: tuple[Fetched, ...] = ()) -> RenderedSource:
    """What the source renders for each `clusters:` customization: Helm values merged over
    the bundle's (the chart rendered again), then the patches, applied by kustomize."""
    source = rendered.source
    config = join(source.path, "bundle.yaml")
    variants: list[tuple[Manifest, ...]] = []
    for index, customization in enumerate(source.options.clusters):
        where = f"clusters[{index}] ({customization.describe()})"
        at: tuple[str, ...] = ("clusters", str(index))
        objects: tuple[Manifest, ...] = rendered.objects
        try:
            if customization.values:
                if source.kind is not SourceKind.HELM:
                    raise RenderError(f"values are for Helm charts; this {source.kind} "
                                      "source takes patches", file=config)
                merged = helm_values_merge(source.options.values, customization.values)
                again = replace(source, options=replace(source.options, values=merged))
                result = _rendered(again, tree, root, tools, helm_client, fetched)
                if result.failed:
                    return replace(result, problems=tuple(
                        replace(p, message=f"{config}:{_line(tree, config, at)}: {where}: "
                                           f"{p.message}")
                        for p in result.problems))
                objects = result.objects
            if customization.patches:
                if tools is None:
                    raise ToolMissing("kustomize is needed to apply the patches", file=config)
                documents = patched(objects, customization.patches, tools.kustomize, config)
                objects = tuple(d for d in documents if isinstance(d, dict))
        except PatchFailed as exc:
            at = (*at, "patches", str(exc.index))
            return RenderedSource(source, (), (Problem(
                source.path, f"clusters[{index}].patches[{exc.index}] "
                f"({customization.describe()}): {exc.message}", config,
                _line(tree, config, at), exc.reason),))
        except GitgateError as exc:
            return RenderedSource(source, (), (Problem(
                source.path, f"{where}: {exc.message}", exc.file or config,
                exc.line if exc.file else _line(tree, config, at), exc.reason),))
        variants.append(objects)
    return replace(rendered, variants=tuple(variants))


def _line(tree: RepoTree, file: str, path: tuple[str, ...]) -> int | None:
    """The line of `path` (keys and list indexes from 0) in the repo's YAML `file`."""
    try:
        text = tree.read(file)
    except GitgateError:
        return None
    return key_line(text, path) if text else None


def _rendered(source: Source, tree: RepoTree, root: Path, tools: Tools | None,
              helm_client: Callable[[], object],
              fetched: tuple[Fetched, ...] = ()) -> RenderedSource:
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
        documents = post.expand_lists(_render_documents(source, tree, root, tools, helm_client,
                                                        fetched))
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


def render_repo(root: Path, tools: Tools | None, *, workers: int | None = None,
                only: Callable[[Source], bool] | None = None,
                cache: RenderCache | None = None,
                scope_of: ScopeOf | None = None,
                mine: Callable[[Source], bool] | None = None,
                summarize: Summarize | None = None,
                clock: Callable[[], int] = time.time_ns,
                holders: Holders | None = None,
                charts: ChartFetcher | None = None) -> RepoRender:
    """Render every source of the repo at `root`. With a `cache`, a source whose inputs did
    not change since the last call is not rendered again. `scope_of` (the API server's
    discovery) says whether a kind is namespaced. `holders`: what the Bundle records hold
    live, to decide between sources with equal rights to one object.

    With `mine` and `summarize` (`run --shard`), a source `mine` does not take is kept, once
    finished, as `summarize` makes it (`bundle.summary`), in the result and in the cache: it
    is rendered again only when its inputs change, or when the scopes it was placed under
    did; a source that becomes this replica's is rendered in full again.

    `charts`: the fetch stage (`charts.stage`), run for each source before its render is
    looked up: the charts it fetches must be locked and allowed (else it fails), and are
    fetched into the store only when missing. Without it no chart is fetched.

    With a `cache`, a render of the whole repo whose inputs are all unchanged (its files by
    their stat stamps, read at `clock`'s time: `render.reuse`) is handed back as it was."""
    root = root.resolve()
    tree = scan_repo(root, clock=clock)
    budget = Budget.from_env()
    whole = _unchanged(cache, only, root, tree, tools, budget, mine, scope_of, holders)
    if whole is not None:
        return replace(whole, tree=tree)
    asked: dict[tuple[str, str], bool | None] = {}
    scope_of = reuse.recording(scope_of, asked)
    discovery = discover(tree)
    sources = [s for s in discovery.sources if only is None or only(s)]
    helm_client = _lazy_helm_client(tools)
    config_problems: dict[str, list[Problem]] = {}
    for problem in discovery.problems:
        config_problems.setdefault(problem.source, []).append(problem)

    fetch = fetch_stage(charts, tree, discovery.config.charts, discovery.config.tenancy)
    fetched: dict[str, tuple[Fetched, ...]] = {}

    def timed_render(source: Source) -> RenderedSource:
        started = time.monotonic()
        try:
            rendered = render_source(source, tree, root, tools, helm_client, budget,
                                     fetched.get(source.path, ()))
        except Exception as exc:  # a bug must fail this source only, never the whole pass
            rendered = RenderedSource(source, (), (Problem(
                source.path, f"unexpected {type(exc).__name__} while rendering this source "
                "(a gitgate bug: please report it with the source's files)", source.path,
                None, Reason.INTERNAL_ERROR),))
        return replace(rendered, seconds=time.monotonic() - started)

    known: Crds = dict(cache.scopes) if cache is not None else {}
    ask = _serialized(scope_of)

    disk = cache.disk if cache is not None else None

    def render_one(source: Source, key: str | None) -> RenderedSource:
        kept = disk.get(key, source) if disk is not None else None
        if kept is not None:
            rendered = source_budget(kept, budget)
        else:
            rendered = timed_render(source)
            if disk is not None:
                disk.put(key, rendered)
        if (mine is not None and summarize is not None and not rendered.failed
                and not mine(source)):
            rendered = summarized_early(rendered, known, ask, summarize)
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
        stage = fetch(source) if source.path not in config_problems else ()
        if isinstance(stage, GitgateError):
            found: RenderedSource | None = RenderedSource(source, (), (Problem(
                source.path, stage.message, stage.file, stage.line, stage.reason),))
        elif source.path in config_problems:
            found = RenderedSource(source, (), tuple(config_problems[source.path]))
        elif cache is not None:
            key = cache_key(source, tree, tools)
            found = cache.get(key)
            if found is not None and found.summary is not None and (mine is None
                                                                     or mine(source)):
                found = None  # this replica's now: its full objects are needed
        else:
            found = None
        if not isinstance(stage, GitgateError) and stage:
            fetched[source.path] = stage
        results.append(found)
        keys.append(key)
    def render_missing() -> None:
        missing = [i for i, found in enumerate(results) if found is None]
        if not missing:
            return
        with ThreadPoolExecutor(max_workers=min(len(missing),
                                                workers or default_workers())) as pool:
            done = pool.map(lambda i: render_one(sources[i], keys[i]), missing)
            for index, rendered in zip(missing, done, strict=True):
                results[index] = rendered

    render_missing()
    memo = cache.memo if cache is not None else None
    tenancy = discovery.config.tenancy
    consulted: dict[ObjectRef, str | None] = {}
    final, warnings, scopes, table = finish_with_scopes(
        within_budget([r for r in results if r is not None], budget.per_pass), memo, scope_of,
        tenancy, holders, consulted)
    if mine is not None and summarize is not None:
        stale = [i for i, r in enumerate(results) if stale_summary(r, dict(scopes))]
        if stale:  # placed under scopes that changed since: rendered and placed again
            known = dict(scopes)
            for index in stale:
                results[index] = None
            render_missing()
            final, warnings, scopes, table = finish_with_scopes(
                within_budget([r for r in results if r is not None], budget.per_pass), memo,
                scope_of, tenancy, holders, consulted)
        final = [_summarized(r, key, dict(scopes), warnings, mine, summarize, cache)
                 for r, key in zip(final, keys, strict=True)]
    done = RepoRender(root, tree, discovery, tuple(final), tuple(warnings), memo, table)
    if cache is not None:
        cache.scopes = scopes
        cache.end_round()
        if disk is not None:
            disk.end_round({key for key in keys if key})
        cache.whole = None
        if only is None and tree.fingerprint and reuse.keepable(done.rendered):
            cache.whole = (reuse.WholeInputs(
                root, tree.fingerprint, tools, budget, reuse.in_full(discovery.sources, mine),
                reuse.answered(asked), scope_of is not None,
                tuple(sorted(tree.racy.items())), tuple(sorted(consulted.items()))), done)
    return done


def _unchanged(cache: RenderCache | None, only: Callable[[Source], bool] | None, root: Path,
               tree: RepoTree, tools: Tools | None, budget: Budget,
               mine: Callable[[Source], bool] | None, scope_of: ScopeOf | None,
               holders: Holders | None) -> RepoRender | None:
    """The last whole render when nothing it depended on changed (`render.reuse`)."""
    if cache is None or cache.whole is None or only is not None:
        return None
    kept, render = cache.whole
    now = reuse.WholeInputs(root, tree.fingerprint, tools, budget,
                            reuse.in_full(render.discovery.sources, mine), (),
                            scope_of is not None)
    if not reuse.still_holds(kept, now, scope_of,
                             lambda file: tree.racy.get(file) or tree.digest(file), holders):
        return None
    # the files racy then hold the same bytes now; those whose stamps tell by now are not
    # read again (as Git refreshes its index): at 5,000 bundles a fresh checkout's 13,000
    # files would otherwise be read and hashed by every no-op pass
    cache.whole = (replace(kept, racy=tuple(sorted(tree.racy.items()))), render)
    cache.hand_back()
    return render  # type: ignore[no-any-return]


def _serialized(scope_of: ScopeOf | None) -> ScopeOf | None:
    """`scope_of` asked by one render worker at a time (discovery fills its cache once)."""
    if scope_of is None:
        return None
    lock = threading.Lock()

    def ask(api_version: str, kind: str) -> bool | None:
        with lock:
            return scope_of(api_version, kind)
    return ask


def _summarized(rendered: RenderedSource, key: str | None, crds: Crds,
                warnings: list[Problem], mine: Callable[[Source], bool],
                summarize: Summarize, cache: RenderCache | None) -> RenderedSource:
    """Another replica's finished source as its summary, kept in the cache in place of its
    full render (one that was this replica's in the last pass); this replica's sources,
    failures and summaries as they are."""
    if rendered.failed or rendered.summary is not None or mine(rendered.source):
        return rendered
    path = rendered.source.path
    summary = summarize(rendered, used_scopes(rendered, crds),
                        tuple(w for w in warnings if w.source == path))
    if cache is not None:
        cache.put(key, summary)
    return summary
