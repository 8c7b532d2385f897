"""Group rendered objects into application bundles. Pure."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from typing import Any

from gitgate.bundle import deps
from gitgate.bundle.policies import link_policies, with_overrides
from gitgate.bundle.tenancy import BUNDLE_CONFIG, police
from gitgate.errors import Reason
from gitgate.memo import Memo, derive
from gitgate.model import (
    Bundle,
    BundleOptions,
    Manifest,
    ObjectRef,
    RenderedSource,
    Source,
    join,
)
from gitgate.model.claims import Holders, arbitrate
from gitgate.model.hookmarks import HookError, Skipped, generated_name, hook_of
from gitgate.model.kindscope import ScopeTable
from gitgate.model.labels import stored_name
from gitgate.model.objects import Problem
from gitgate.model.ownership import claim_problem, claimed_bundle
from gitgate.model.rolloutspec import Members
from gitgate.model.tenantrules import owner_of, rights_problem
from gitgate.model.tenantspec import Tenancy
from gitgate.render.post import with_bundle_label


def bundle_digest(objects: Iterable[Manifest], options: BundleOptions | None = None) -> str:
    """A stable sha256 of a bundle's rendered objects (order and key order do not matter) and
    of what else in `bundle.yaml` decides what the bundle does (`acting_options`): an approval
    of one digest never approves a bundle sent elsewhere or rolled out otherwise."""
    ordered: list[Any] = sorted(objects, key=lambda o: ObjectRef.of(o))
    if options is not None:
        ordered = [*ordered, acting_options(options)]
    canonical = json.dumps(ordered, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def acting_options(options: BundleOptions) -> dict[str, Any]:
    """The bundle.yaml (and gitgate.yaml defaults) fields that change where or how a bundle
    goes without changing its rendered objects, and the charts its lock pins: approving one
    digest approves exactly those chart archives."""
    acting: dict[str, Any] = {
        "placement": options.placement, "labels": options.labels,
        "dependsOn": list(options.depends_on),
        "rollout": dataclasses.asdict(options.rollout) if options.rollout else None}
    if options.locked:  # the charts fetched, by version and archive digest
        acting["charts"] = {e.dependency or e.ref.chart: [e.version, e.digest]
                            for e in options.locked}
    return {"gitgate.io/options": acting}


def _label_override(obj: Manifest, base: str) -> str | None:
    """The bundle the object's label moves it to: only within its own source (rendering
    fails a source whose label names another bundle; this keeps grouping safe by itself)."""
    return None if claim_problem(obj, base) else claimed_bundle(obj)


def _single(owners: set[str]) -> str | None:
    return next(iter(owners)) if len(owners) == 1 else None


def split_by_app(base: str, objects: list[Manifest]) -> dict[ObjectRef, str]:
    """Assign each object a bundle name: `<base>/<workload>` for workloads and what follows them
    (only when exactly one app uses it), `<base>` for the rest."""
    assignment: dict[ObjectRef, str] = {}
    workloads = [o for o in objects if deps.is_workload(o)]
    for workload in workloads:
        assignment[ObjectRef.of(workload)] = f"{base}/{workload['metadata']['name']}"
    by_ref = {ObjectRef.of(o): o for o in objects}
    users: dict[ObjectRef, set[str]] = {}
    present = set(by_ref)
    for workload in workloads:
        app = assignment[ObjectRef.of(workload)]
        for ref in deps.dependency_refs(workload, present):
            users.setdefault(ref, set()).add(app)
        for obj in deps.exposing(workload, objects):
            users.setdefault(ObjectRef.of(obj), set()).add(app)
    for ref, apps in users.items():
        if ref not in assignment and _single(apps):
            assignment[ref] = _single(apps)  # type: ignore[assignment]
    for ref, obj in by_ref.items():
        if obj.get("kind") != "Ingress" or ref in assignment:
            continue
        apps = {assignment.get(ObjectRef("", "Service", ref.namespace, name), base)
                for name in deps.ingress_services(obj)}
        if _single(apps):
            assignment[ref] = _single(apps)  # type: ignore[assignment]
    return {ref: assignment.get(ref, base) for ref in by_ref}


def group_source(rendered: RenderedSource) -> list[Bundle]:
    """One bundle per source, or one per application with `split: app`.
    A `gitgate.io/bundle` label on an object moves it to another bundle of its source.
    A summarized source (`bundle.summary`) has its bundles already."""
    source = rendered.source
    base = source.bundle_name
    labels = dict(source.options.labels)
    if rendered.failed:
        return [Bundle(base, source, (), rendered.problems, labels)]
    if rendered.summary is not None:  # another replica's source, grouped when summarized
        return [Bundle(fact.name, source, fact.objects, fact.problems, labels,
                       digest=fact.digest) for fact in rendered.summary.bundles]
    objects = list(rendered.objects)
    if source.options.split == "app":
        names = split_by_app(base, objects)
    else:
        names = {ObjectRef.of(o): base for o in objects}
    members: dict[str, list[Manifest]] = {}
    for obj in objects:
        name = _label_override(obj, base) or names[ObjectRef.of(obj)]
        members.setdefault(name, []).append(with_bundle_label(obj, name))
    if not members:
        members[base] = []
    bundles = [_bundle(name, source, objs, labels) for name, objs in sorted(members.items())]
    return [_customized(b, rendered) for b in bundles] if rendered.overrides else bundles


def _customized(bundle: Bundle, rendered: RenderedSource) -> Bundle:
    """The bundle with the per-cluster changes of its objects, which its digest covers."""
    refs = {ObjectRef.of(o) for o in bundle.objects}
    mine = tuple(o for o in rendered.overrides if o.ref in refs)
    if not mine or bundle.failed:
        return bundle
    return replace(bundle, customized=mine,
                   digest=with_overrides(bundle.digest, [o.as_dict() for o in mine]))


def _bundle(name: str, source: Source, objects: list[Manifest],
            labels: dict[str, str]) -> Bundle:
    """A bundle of `objects`: hooks that never run are set aside, generated names fixed."""
    kept: list[Manifest] = []
    skipped: list[Manifest] = []
    why: list[str] = []
    problems: list[Problem] = []
    for obj in objects:
        try:
            hook = hook_of(obj)
        except HookError as exc:
            problems.append(Problem(source.path, f"{ObjectRef.of(obj)}: {exc}; the bundle is "
                                    "not applied until it is fixed", source.path))
            continue
        if isinstance(hook, Skipped):
            skipped.append(obj)
            why.append(hook.why)
        else:
            kept.append(obj)
    if problems:
        return Bundle(name, source, (), tuple(problems), labels)
    base = digest = bundle_digest(kept, source.options)
    named = [name_generated(o, base) for o in kept]
    if any(a is not b for a, b in zip(named, kept, strict=True)):
        digest = bundle_digest(named, source.options)
    skipped = [name_generated(o, base) for o in skipped]
    return Bundle(name, source, tuple(sorted(named, key=ObjectRef.of)), (), labels,
                  tuple(sorted(zip((ObjectRef.of(o) for o in skipped), why, strict=True))),
                  digest)


def name_generated(obj: Manifest, digest: str) -> Manifest:
    """An object with `generateName` is named after the bundle's digest and its own content:
    created once per change of the bundle, never again by a resync."""
    meta = obj.get("metadata") or {}
    prefix = meta.get("generateName")
    if not isinstance(prefix, str) or not prefix:
        return obj
    unnamed = {**obj, "metadata": {k: v for k, v in meta.items() if k != "name"}}
    own = hashlib.sha256(json.dumps(unnamed, sort_keys=True).encode()).hexdigest()
    return {**obj, "metadata": {**meta, "name": generated_name(prefix, digest, own)}}


def group_all(rendered: Iterable[RenderedSource], memo: Memo | None = None,
              tenancy: Tenancy | None = None, members: Members | None = None,
              scopes: ScopeTable | None = None, holders: Holders | None = None
              ) -> list[Bundle]:
    """Every source's bundles, by name, linked by the Karmada policies in the repo (see
    `bundle.policies`), each held to its tenant's rules (`bundle.tenancy`; `scopes`: which
    kinds are namespaced). A bundle name two sources claim stays with the one that has the
    right to it (`holders`: what the Bundle records hold live; `model.claims`). With a
    `memo`, a source finished as in the last pass keeps the bundles it had (the same
    objects, so what is derived from them is kept too), and the very same sources (a whole
    render handed back, `render.reuse`) keep the very same bundles."""
    return list(grouped(rendered, memo, tenancy, members, scopes, holders)[0])


def grouped(rendered: Iterable[RenderedSource], memo: Memo | None = None,
            tenancy: Tenancy | None = None, members: Members | None = None,
            scopes: ScopeTable | None = None, holders: Holders | None = None
            ) -> tuple[tuple[Bundle, ...], tuple[Problem, ...]]:
    """`group_all`, and the failures of bundles that lost their name to another source's
    (the name stands for the keeper's bundle, so theirs are said here)."""
    sources = tuple(rendered)
    scopes = scopes or ScopeTable()
    return derive(memo, "grouped", sources, (repr((tenancy, members, scopes)),
                                             holders.key if holders is not None else ()),
                  partial(_grouped, sources, memo, tenancy, members, scopes, holders))


def _grouped(rendered: tuple[RenderedSource, ...], memo: Memo | None, tenancy: Tenancy | None,
             members: Members | None, scopes: ScopeTable, holders: Holders | None
             ) -> tuple[tuple[Bundle, ...], tuple[Problem, ...]]:
    bundles = [b for r in rendered
               for b in derive(memo, "bundles", r, (), partial(group_source, r))]
    named, lost = _one_source_per_name(bundles, tenancy, scopes, holders)
    policed = police(link_policies(named), tenancy, members, scopes)
    refused = {b.name: b for b in policed if b.failed} if len(policed) == len(named) else {}
    if any(not b.failed and b.name in refused for b in named):
        # a bundle failed for its tenant writes nothing: what its policies would do to the
        # others (their digests, what acts on them) is worked out again without it
        policed = police(link_policies([refused.get(b.name, b) for b in named]), tenancy,
                         members, scopes)
    return tuple(sorted(policed, key=lambda b: b.name)), lost


def _one_source_per_name(bundles: list[Bundle], tenancy: Tenancy | None = None,
                         scopes: ScopeTable | None = None,
                         holders: Holders | None = None
                         ) -> tuple[list[Bundle], tuple[Problem, ...]]:
    """A bundle name (as stored: `shop/carts` and `shop.carts` are one) comes from one source.
    When several sources claim one, the one with the right to it keeps it (`model.claims`:
    its tenant's rules over the bundle's objects, then the Bundle record's folder), and
    every bundle of the others fails (nothing of theirs is written or pruned); when none can
    keep it, all of them fail, and one failed bundle stands for the name."""
    sources: dict[str, set[str]] = {}
    for bundle in bundles:
        sources.setdefault(stored_name(bundle.name), set()).add(bundle.source.path)
    clashes = {key: paths for key, paths in sources.items() if len(paths) > 1}
    if not clashes:
        return bundles, ()
    table = scopes or ScopeTable()
    claimed: dict[tuple[str, str], list[Bundle]] = {}
    for bundle in bundles:
        claimed.setdefault((stored_name(bundle.name), bundle.source.path), []).append(bundle)
    blamed: dict[str, list[Problem]] = {}
    kept: set[tuple[str, str]] = set()
    for key, paths in sorted(clashes.items()):
        ruling = arbitrate(sorted(paths), partial(_no_right, claimed, key, tenancy, table),
                           holders.bundles.get(key) if holders is not None else None)
        if ruling.keeper is not None:
            kept.add((key, ruling.keeper))
        for path in sorted(ruling.losers):
            others = ", ".join(sorted(p for p in paths if p != path))
            said = ruling.said(path) or (
                "a name belongs to one source, so neither is applied until one sets a unique "
                f"`name` in {join(path, BUNDLE_CONFIG)}")
            blamed.setdefault(path, []).append(Problem(
                path, f"the bundle name {key!r} is also claimed by {others}; {said}",
                join(path, BUNDLE_CONFIG), None, Reason.DUPLICATE_BUNDLE))
    out: dict[str, Bundle] = {}
    lost: list[Problem] = []
    for bundle in bundles:
        key = stored_name(bundle.name)
        problems = blamed.get(bundle.source.path)
        if problems is not None:
            told = any(p.reason == Reason.DUPLICATE_BUNDLE for p in bundle.problems)
            bundle = Bundle(bundle.name, bundle.source, (),
                            bundle.problems + (() if told else tuple(problems)), bundle.labels)
        if key in out and (key, bundle.source.path) in kept:
            lost += out[key].problems
            out[key] = bundle  # the keeper stands for its name
            continue
        if key in out and (key, out[key].source.path) in kept:
            lost += bundle.problems
            continue
        if key in out:
            merged = tuple(dict.fromkeys(out[key].problems + bundle.problems))
            bundle = replace(out[key], problems=merged)
        out[key] = bundle
    return list(out.values()), tuple(dict.fromkeys(lost))


def _no_right(claimed: dict[tuple[str, str], list[Bundle]], key: str, tenancy: Tenancy | None,
              scopes: ScopeTable, path: str) -> str | None:
    """Why the source at `path` has no right to the bundle name `key`: one of the objects
    its bundle of that name holds is outside its tenant's rules (None: it has)."""
    for bundle in claimed.get((key, path), ()):
        for obj in bundle.objects:
            why = rights_problem(obj, path, tenancy, scopes)
            if why is not None:
                return why
        if not bundle.objects and owner_of(path, tenancy) == "":
            return f"{path} belongs to no single tenant"
    return None
