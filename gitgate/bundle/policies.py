"""Karmada policies committed in the repo, across bundles. Pure: bundles in, bundles out.

- An OverridePolicy or ClusterOverridePolicy changes what the bundles it selects run, so it
  belongs to each of them, wherever it is committed (so do the other Karmada objects that
  act on named objects: (Cron)FederatedHPAs, WorkloadRebalancers, interpreter
  customizations; see `selectors.is_acting`): it is recorded on the bundle that ships
  it (`acts_on`: which other bundles it acts on, for holds and suspensions) and folded into
  the digest of every bundle it acts on (an approval, or a rollout, covers it).
- A PropagationPolicy or ClusterPropagationPolicy decides where, and whether, templates are
  dispatched: one that selects another bundle's objects would take them over (and dispatch
  them past that bundle's holds and suspensions), so its source fails, naming that bundle.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from gitgate.bundle.selectors import (
    CLUSTER_WIDE_KINDS,
    is_acting,
    is_control_plane,
    is_propagation,
    policy_selects,
    selectors_of,
)
from gitgate.errors import Reason
from gitgate.model import Bundle, Manifest, ObjectRef, Problem


@dataclass(frozen=True)
class _Owned:
    obj: Manifest
    bundle: str


class ObjectIndex:
    """Every template of the repo by apiVersion and kind (then namespace): a selector is
    matched against the objects it could select, not against all of them."""

    def __init__(self, bundles: Iterable[Bundle]):
        self._by_kind: dict[tuple[str, str], list[_Owned]] = {}
        self._by_namespace: dict[tuple[str, str, str], list[_Owned]] = {}
        for bundle in bundles:
            for obj in bundle.objects:
                if is_control_plane(obj):
                    continue
                owned = _Owned(obj, bundle.name)
                kind = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
                namespace = str((obj.get("metadata") or {}).get("namespace") or "")
                self._by_kind.setdefault(kind, []).append(owned)
                self._by_namespace.setdefault((*kind, namespace), []).append(owned)

    def _candidates(self, policy: Manifest) -> Iterator[_Owned]:
        selectors = selectors_of(policy)
        namespace = (None if policy.get("kind") in CLUSTER_WIDE_KINDS
                     else str((policy.get("metadata") or {}).get("namespace") or ""))
        if not selectors:  # an override without selectors: everything in reach
            if not is_acting(policy):
                return
            groups: Iterable[list[_Owned]] = (
                self._by_kind.values() if namespace is None else
                (v for k, v in self._by_namespace.items() if k[2] == namespace))
            for group in groups:
                yield from group
            return
        for selector in selectors:
            if not isinstance(selector, dict):
                continue
            kind = (str(selector.get("apiVersion", "")), str(selector.get("kind", "")))
            where = namespace if namespace is not None else (selector.get("namespace") or None)
            if where is not None:
                yield from self._by_namespace.get((*kind, str(where)), [])
            else:
                yield from self._by_kind.get(kind, [])

    def selected(self, policy: Manifest) -> dict[ObjectRef, str]:
        """The repo objects `policy` selects, with the bundle of each."""
        return {ObjectRef.of(o.obj): o.bundle for o in self._candidates(policy)
                if policy_selects(policy, o.obj)}


def link_policies(bundles: list[Bundle]) -> list[Bundle]:
    """`bundles` with what repo-authored Karmada policies do across them: override links and
    digests, and sources failed for a propagation policy that takes over another bundle."""
    shipping = [b for b in bundles if not b.failed
                and any(is_acting(o) or is_propagation(o) for o in b.objects)]
    if not shipping:
        return bundles
    index = ObjectIndex(b for b in bundles if not b.failed)
    acts_on: dict[str, list[tuple[ObjectRef, tuple[str, ...]]]] = {}
    foreign: dict[str, list[Manifest]] = {}
    takeovers: dict[str, list[str]] = {}  # source path -> why it fails
    for bundle in shipping:
        for policy in (o for o in bundle.objects if is_acting(o) or is_propagation(o)):
            selected = index.selected(policy)
            others = tuple(sorted({b for b in selected.values() if b != bundle.name}))
            if is_propagation(policy):
                if others:
                    takeovers.setdefault(bundle.source.path, []).append(
                        _takeover(policy, bundle.name, selected))
                continue
            if others:
                acts_on.setdefault(bundle.name, []).append((ObjectRef.of(policy), others))
                for name in others:
                    foreign.setdefault(name, []).append(policy)
    out = []
    for bundle in bundles:
        if bundle.source.path in takeovers and not bundle.failed:
            out.append(Bundle(bundle.name, bundle.source, (), tuple(
                Problem(bundle.source.path, why, bundle.source.path, None,
                        Reason.POLICY_TAKEOVER) for why in takeovers[bundle.source.path]),
                bundle.labels))
            continue
        if bundle.name in acts_on or bundle.name in foreign:
            overrides = sorted(foreign.get(bundle.name, []), key=ObjectRef.of)
            bundle = replace(bundle, acts_on=tuple(acts_on.get(bundle.name, ())),
                             overridden_by=tuple(ObjectRef.of(o) for o in overrides),
                             digest=with_overrides(bundle.digest, overrides))
        out.append(bundle)
    return out


def with_overrides(digest: str, overrides: list[Manifest]) -> str:
    """The bundle's digest, covering the override policies from elsewhere that act on it."""
    if not overrides:
        return digest
    canonical = json.dumps([digest, *overrides], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _takeover(policy: Manifest, own: str, selected: dict[ObjectRef, str]) -> str:
    taken = sorted((bundle, ref) for ref, bundle in selected.items() if bundle != own)
    shown = ", ".join(f"{ref} of bundle {bundle}" for bundle, ref in taken[:5])
    more = f" (and {len(taken) - 5} more)" if len(taken) > 5 else ""
    bundles = ", ".join(sorted({b for b, _ in taken}))
    return (f"{ObjectRef.of(policy)} selects {shown}{more}: a propagation policy in the repo "
            f"may select only its own bundle's objects, else it would take over {bundles} "
            "(and dispatch them past that bundle's holds and suspensions); narrow its "
            "resourceSelectors, or move the policy into that bundle's folder")

