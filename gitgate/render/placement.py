"""After every source is rendered: each placed (generated names, default namespaces, its
clusters' overrides compiled), the scope of each kind judged (the API server's, else the
built-in table, else the repo's CRDs), and what two sources both render settled (pure)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from gitgate.errors import Reason
from gitgate.memo import Memo, derive
from gitgate.model import (
    ObjectRef,
    Problem,
    RenderedSource,
    Source,
    join,
)
from gitgate.model.claims import Holders, arbitrate
from gitgate.model.kindscope import ScopeTable
from gitgate.model.tenantrules import rights_problem
from gitgate.model.tenantspec import Tenancy
from gitgate.render import post
from gitgate.render.customize import compile_overrides


def _entry_line(source: Source, problem: str) -> int | None:
    """The line of the `clusters[N]` entry a problem begins with."""
    index = re.match(r"clusters\[(\d+)\]", problem)
    entries = source.options.clusters
    return entries[int(index.group(1))].line if index and int(index.group(1)) < len(entries) \
        else None



ScopeOf = Callable[[str, str], "bool | None"]  # (apiVersion, kind) -> namespaced, if known



KindScopes = tuple[tuple[tuple[str, str], bool], ...]  # (group, kind) -> namespaced, sorted



Scopes = tuple[tuple[tuple[str, str], bool | None], ...]  # as a summary read them



def finish(rendered: list[RenderedSource], memo: Memo | None = None,
           scope_of: ScopeOf | None = None) -> tuple[list[RenderedSource], list[Problem]]:
    final, warnings, _, _ = finish_with_scopes(rendered, memo, scope_of)
    return final, warnings



def finish_with_scopes(rendered: list[RenderedSource], memo: Memo | None = None,
                       scope_of: ScopeOf | None = None, tenancy: Tenancy | None = None,
                       holders: Holders | None = None,
                       consulted: dict[ObjectRef, str | None] | None = None,
                       ) -> tuple[list[RenderedSource], list[Problem], KindScopes, ScopeTable]:
    """Pure: default namespaces, then duplicates across sources. The scope of a kind is the
    API server's (`scope_of`, its discovery) where it serves the kind, else Kubernetes' and
    Karmada's own (`model.kindscope`), else what the repo's CRDs say.

    An object two sources render is kept by the one with the right to it (`tenancy`: its
    tenant's rules), or between equals by the one whose bundle holds it live (`holders`);
    every other claimant fails, and with nobody to keep it, all do: gitgate cannot tell
    which one is meant. So do sources rendering one name of a kind of unknown scope in
    different namespaces (cluster-scoped, they would be one object). With a `memo`, a
    source the render cache handed back is finished as it was in the last pass (unless the
    scope of a kind it renders changed). A summarized source (`SourceSummary`) was placed
    when it was summarized: it is kept as it is, with the warnings placing it gave; the
    scopes returned say whether it was placed under the same ones, and the table how each
    kind was judged.
    `consulted`: filled with each object the records were asked about, and their answer.
    """
    crds: dict[tuple[str, str], bool] = {}
    for result in rendered:
        crds.update(derive(memo, "crds", result, (), partial(post.crd_scopes, result.objects)))
    unserved: frozenset[tuple[str, str]] = frozenset()
    if scope_of is not None:
        served = _discovered(rendered, memo, scope_of)
        unserved = frozenset(kind for kind in crds if kind not in served)
        crds.update(served)
    scopes = tuple(sorted(crds.items()))
    table = ScopeTable(scopes, unserved, scope_of is not None)
    warnings: list[Problem] = []
    placed: list[RenderedSource] = []
    for result in rendered:
        if result.failed or result.summary is not None:
            warnings += result.summary.warnings if result.summary is not None else ()
            placed.append(result)
            continue
        done, notes = derive(memo, "placed", result, _placing_scopes(result, crds, memo),
                             partial(_placed, result, crds))
        warnings += notes
        placed.append(done)
    owners: dict[ObjectRef, list[str]] = {}
    for result in placed:
        refs = derive(memo, "refs", result, (), partial(_refs, result))
        for ref in refs:
            owners.setdefault(ref, []).append(result.source.path)
    clashes: dict[str, list[Problem]] = {}
    by_path = {r.source.path: r for r in placed}
    for ref, paths in sorted((r, p) for r, p in owners.items() if len(p) > 1):
        held_by = holders.objects.get(ref) if holders is not None else None
        if consulted is not None:
            consulted[ref] = held_by
        ruling = arbitrate(paths, partial(_no_right, ref, by_path, tenancy, table), held_by)
        for path in ruling.losers:
            others = ", ".join(p for p in sorted(set(paths)) if p != path)
            said = ruling.said(path)
            clashes.setdefault(path, []).append(Problem(
                path, f"{ref} is also rendered by {others}; "
                + (said if said else "an object must come from one source"),
                path, None, Reason.DUPLICATE_OBJECT))
    for path, problem in _scope_clashes(owners, crds):
        clashes.setdefault(path, []).append(problem)
    final = [replace(r, objects=(), problems=r.problems + tuple(clashes[r.source.path]),
                     summary=None)
             if r.source.path in clashes else r for r in placed]
    return final, warnings, scopes, table



def _no_right(ref: ObjectRef, by_path: dict[str, RenderedSource], tenancy: Tenancy | None,
              table: ScopeTable, path: str) -> str | None:
    """Why the source at `path` has no right to the object `ref` it renders (None: it has)."""
    obj = next((o for o in by_path[path].objects if ObjectRef.of(o) == ref), None)
    return None if obj is None else rights_problem(obj, path, tenancy, table)



def _discovered(rendered: list[RenderedSource], memo: Memo | None, scope_of: ScopeOf
                ) -> dict[tuple[str, str], bool]:
    """The API server's answer for each kind the repo uses that it serves: it decides, over
    the built-in table and over any CRD of the repo."""
    answers: dict[tuple[str, str], bool] = {}
    asked: set[tuple[str, str]] = set()
    for result in rendered:
        for api_version, kind in derive(memo, "kinds", result, (), partial(_kinds, result)):
            group = api_version.rpartition("/")[0]
            if (group, kind) in asked:
                continue
            asked.add((group, kind))
            namespaced = scope_of(api_version, kind)
            if namespaced is not None:
                answers[(group, kind)] = namespaced
    return answers



def _kinds(result: RenderedSource) -> frozenset[tuple[str, str]]:
    return frozenset((str(o["apiVersion"]), str(o["kind"])) for o in result.objects)



def _scope_clashes(owners: dict[ObjectRef, list[str]], crds: dict[tuple[str, str], bool]
                   ) -> list[tuple[str, Problem]]:
    """One name of a kind whose scope nobody knows, in several namespaces: if the kind is
    cluster-scoped they are one live object that two places own (and one's removal deletes
    the other's), so every source involved fails until the scope is known."""
    spread: dict[tuple[str, str, str], dict[str, set[str]]] = {}
    for ref, paths in owners.items():
        if post.is_namespaced(ref.group, ref.kind, crds) is None:
            where = spread.setdefault((ref.group, ref.kind, ref.name), {})
            for path in paths:
                where.setdefault(path, set()).add(ref.namespace)
    found = []
    for (group, kind, name), where in sorted(spread.items()):
        namespaces = set().union(*where.values())
        if len(namespaces) < 2:
            continue
        for path in sorted(where):
            found.append((path, Problem(
                path, f"{kind} {name} ({group}) is rendered in the namespaces "
                f"{', '.join(sorted(namespaces))} (by {', '.join(sorted(where))}), and nothing "
                "says whether the kind is namespaced: if it is cluster-scoped these are one "
                "object. Add its CustomResourceDefinition to the repo, or run with "
                "--kubeconfig so that the API server says", path, None, Reason.UNKNOWN_KIND)))
    return found



def _refs(result: RenderedSource) -> frozenset[ObjectRef]:
    return frozenset(ObjectRef.of(o) for o in result.objects)



def _placed(result: RenderedSource, crds: dict[tuple[str, str], bool],
            ) -> tuple[RenderedSource, list[Problem]]:
    """The source with generated names and default namespaces, and a warning per unknown
    kind. A source with an object it cannot own (`post.ownership_problems`) fails whole."""
    objects, notes = post.default_namespace(post.named_generated(result.objects),
                                            result.source.options.namespace or "default", crds)
    warnings = [Problem(result.source.path, n, result.source.path, None, Reason.UNKNOWN_KIND)
                for n in notes]
    refused = post.ownership_problems(objects, result.source.bundle_name)
    variants = [(customization, tuple(post.default_namespace(
        post.named_generated(variant), result.source.options.namespace or "default", crds)[0]))
        for customization, variant in zip(result.source.options.clusters, result.variants,
                                          strict=False)]
    for _, variant in variants:
        refused += [why for why in post.ownership_problems(list(variant),
                                                           result.source.bundle_name)
                    if why not in refused]
    if refused:
        return replace(result, objects=(), variants=(), problems=result.problems + tuple(
            Problem(result.source.path, f"{why}; nothing of this source is applied until it "
                    "is fixed", result.source.path, None, Reason.NOT_OWNED)
            for why in refused)), warnings
    overrides, problems = compile_overrides(tuple(objects), variants)
    if problems:
        config = join(result.source.path, "bundle.yaml")
        return replace(result, objects=(), variants=(), problems=result.problems + tuple(
            Problem(result.source.path, problem, config, _entry_line(result.source, problem))
            for problem in problems)), warnings
    return replace(result, objects=tuple(post.labelled_early(
        objects, result.source.bundle_name, result.source.options.split == "app")),
        variants=(), overrides=overrides), warnings



Summarize = Callable[[RenderedSource, Scopes, tuple[Problem, ...]], RenderedSource]



Crds = dict[tuple[str, str], bool]



def _rendered_kinds(result: RenderedSource) -> frozenset[tuple[str, str]]:
    """The (group, kind) of every object `result` renders, its variants' included."""
    kinds = {(post.group_of(o), str(o.get("kind", ""))) for o in result.objects}
    return frozenset(kinds | {(post.group_of(o), str(o.get("kind", "")))
                              for v in result.variants for o in v})


def _placing_scopes(result: RenderedSource, crds: Crds, memo: Memo | None
                    ) -> tuple[tuple[tuple[str, str], bool | None], ...]:
    """What placing `result` reads of the scopes: for each kind it renders, whether it is
    namespaced as `post.default_namespace` decides it (the repo's CRDs or the API server,
    else the built-in table). Placement is done again only when one of these changes, not
    when a kind the source does not render is learned (the API server's discovery)."""
    kinds = derive(memo, "rendered-kinds", result, (), partial(_rendered_kinds, result))
    return tuple(sorted((kind, post.is_namespaced(*kind, crds)) for kind in kinds))


def used_scopes(result: RenderedSource, crds: Crds) -> Scopes:
    """What placing `result` read of the scopes: for each (group, kind) it renders, the
    scope the repo or the API server gave it (None: none; the kind's table then decides).
    A summary placed so is stale once any of these differs."""
    kinds = {(post.group_of(o), str(o.get("kind", ""))) for o in result.objects}
    kinds |= {(post.group_of(o), str(o.get("kind", ""))) for v in result.variants for o in v}
    return tuple(sorted((kind, crds.get(kind)) for kind in kinds))



def stale_summary(result: RenderedSource | None, crds: Crds) -> bool:
    return (result is not None and result.summary is not None
            and any(crds.get(kind) != scope for kind, scope in result.summary.scopes))



def summarized_early(rendered: RenderedSource, known: Crds, scope_of: ScopeOf | None,
                     summarize: Summarize) -> RenderedSource:
    """Another replica's source summarized as soon as it is rendered, placed under the
    scopes known now (the last pass's, its own CRDs, the API server's answers): its full
    objects never wait for the rest of the repo, so a cold start holds one source of another
    shard at a time per worker, not all of them. Placed under scopes the whole repo changes,
    it is found stale after `finish`, and rendered again."""
    crds = {**known, **post.crd_scopes(rendered.objects)}
    if scope_of is not None:
        for api_version, kind in sorted(_kinds(rendered)):
            namespaced = scope_of(api_version, kind)
            if namespaced is not None:
                crds[(api_version.rpartition("/")[0], kind)] = namespaced
    placed, notes = _placed(rendered, crds)
    if placed.failed:
        return placed
    return summarize(placed, used_scopes(rendered, crds), tuple(notes))
