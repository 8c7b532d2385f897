"""A template a bundle takes over from another bundle: the policy of the bundle it came
from lets go of it before the template is written (and before a suspension is awaited).

Karmada leaves a template with the policy that claimed it for as long as that policy selects
it (gitgate's policies share one priority, so none preempts another). The bundle the template
came from narrows its policy only with its other policies, after the templates, and not at
all while it waits on a dependency. Until then the taking bundle's content would be
dispatched by the giving bundle's placement, to clusters the taking bundle may not place it
on, and a taking bundle's suspension would never reach the template's binding (the pass
would wait for it in vain). So, once the suspended policies (and a new bundle's own) are
written, the giving bundle's live policies drop the selectors that name the template
(nothing else of them changes: their placement and suspension stay as they are until their
own write), and Karmada hands the template to the taking bundle's policy, suspension
included, or leaves it unclaimed, as its members run it, until that policy is written."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import stages
from gitgate.apply.inventory import Inventory
from gitgate.apply.work import ApplyOptions, BundleWork
from gitgate.errors import GitgateError
from gitgate.karmada.policy import is_policy
from gitgate.model import Manifest, ObjectRef, Verdict

_PROPAGATION = ("PropagationPolicy", "ClusterPropagationPolicy")
_TEMPLATE_STAGES = (stages.STAGE_SUSPENDED_CRDS, stages.STAGE_CLUSTER, stages.STAGE_NAMESPACED)
_SERVER_FIELDS = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation",
                  "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")


@dataclass(frozen=True)
class Giver:
    """A bundle whose live policies may let go of a template another bundle takes over: its
    record, and whether it rewrites or prunes its policies this pass (then a policy left
    selecting nothing may go now; else it stays, and the template with it)."""

    record: Inventory
    prunes: bool = True


def gives(unit: BundleWork) -> bool:
    """Whether the bundle's live policies may let go of a template another bundle takes
    over: it is written this pass, or its render is known and it is neither held nor failed
    but waits (a dependency not out yet), so what it has in Git is known not to include the
    template. A held bundle's objects are frozen, and what a bundle that failed to render
    might claim is kept back from the others: neither gives anything."""
    if unit.diff is not None:
        return True
    return unit.plan is not None and unit.plan.verdict.verdict not in (Verdict.FAILED,
                                                                        Verdict.HELD)


def taken_over(work: Mapping[str, BundleWork], staged: Mapping[str, dict[int, list[Manifest]]],
               takers: set[str], giving: Mapping[str, Giver]
               ) -> dict[str, dict[ObjectRef, str]]:
    """Per bundle that gives templates up (`giving`: the records of the bundles this pass
    writes or prunes, or that wait, `gives`), the templates one of `takers` writes this pass
    that its record lists, with the apiVersion they are written with."""
    out: dict[str, dict[ObjectRef, str]] = {}
    holders: dict[ObjectRef, list[str]] | None = None  # built at the first new template
    for name in sorted(takers):
        unit = work[name]
        own = {e.ref for e in unit.previous.entries} if unit.previous else set()
        new = {ObjectRef.of(o): str(o["apiVersion"]) for stage in _TEMPLATE_STAGES
               for o in staged[name][stage] if not is_policy(o) and ObjectRef.of(o) not in own}
        if not new:
            continue
        if holders is None:
            holders = {}
            for other, giver in giving.items():
                for entry in giver.record.entries:
                    holders.setdefault(entry.ref, []).append(other)
        for ref, api in new.items():
            for other in holders.get(ref, ()):
                if other != name and ref not in _still_written(work.get(other)):
                    out.setdefault(other, {})[ref] = api
    return out


def _still_written(unit: BundleWork | None) -> set[ObjectRef]:
    if unit is None or unit.diff is None:
        return set()
    return {ObjectRef.of(o) for o in unit.diff.to_apply} | set(unit.diff.unchanged)


def let_go(giving: Mapping[str, Giver], taken: Mapping[str, Mapping[ObjectRef, str]],
           cluster: ClusterPort, options: ApplyOptions) -> None:
    """Write each giving bundle's recorded propagation policies without the selectors that
    name a template taken from it. One left selecting nothing is deleted when the giving
    bundle rewrites or prunes its policies this pass anyway, else left as it is. A policy
    that cannot be read or written is left as it is: the wait for the suspension then says
    which binding did not follow. Nor is one of a bundle that a freeze pushed while the pass
    writes covers (`options.late_freeze`): nothing more of it is written, so its templates
    stay with it and the taking bundle's wait fails."""
    if options.dry_run:
        return
    for name, refs in sorted(taken.items()):
        if options.frozen_late(name) is not None:
            continue
        for entry in giving[name].record.entries:
            if entry.ref.group != "policy.karmada.io" or entry.kind not in _PROPAGATION:
                continue
            try:
                live = cluster.get(entry.api_version, entry.kind, entry.namespace, entry.name)
                narrowed = _narrowed(live, refs)
                if narrowed is None:
                    continue
                if narrowed["spec"]["resourceSelectors"]:
                    cluster.apply(narrowed)
                elif giving[name].prunes:
                    cluster.delete(entry.api_version, entry.kind, entry.namespace, entry.name)
            except GitgateError:
                continue


def _narrowed(policy: Manifest | None, refs: Mapping[ObjectRef, str]) -> Manifest | None:
    """The policy without its selectors naming one of `refs` (None: it names none)."""
    if policy is None:
        return None
    spec = policy.get("spec") or {}
    selectors = spec.get("resourceSelectors") or []
    namespace = (policy.get("metadata") or {}).get("namespace") or ""
    kept = [s for s in selectors if not _names(s, namespace, refs)]
    if len(kept) == len(selectors):
        return None
    out = copy.deepcopy(policy)
    out.pop("status", None)
    meta = out["metadata"]
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    for part in ("labels", "annotations"):  # Karmada's own (its permanent-id is immutable)
        if part in meta:
            meta[part] = {k: v for k, v in meta[part].items()
                          if not k.partition("/")[0].endswith("karmada.io")}
    out["spec"]["resourceSelectors"] = kept
    return out


def _names(selector: Manifest, namespace: str, refs: Mapping[ObjectRef, str]) -> bool:
    if not selector.get("name") or selector.get("labelSelector"):
        return False
    api = str(selector.get("apiVersion", ""))
    ref = ObjectRef(api.rpartition("/")[0], str(selector.get("kind", "")),
                    str(selector.get("namespace") or namespace), str(selector["name"]))
    return refs.get(ref) == api
