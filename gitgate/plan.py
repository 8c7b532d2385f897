"""Offline plan: render -> bundles -> gates -> verdicts -> policies. Pure over the rendered repo
and the gate files' text (read by `source.tree.gate_texts`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property, partial

from gitgate.bundle.group import grouped
from gitgate.bundle.selectors import is_control_plane
from gitgate.bundle.tenancy import tenants_of, unjudged
from gitgate.errors import Reason
from gitgate.gate.evaluate import GateState, evaluate, gate_states
from gitgate.gate.spec import parse_gates
from gitgate.karmada.dispatch import propagated
from gitgate.karmada.policy import (
    generated_overrides,
    generated_policies,
    is_policy,
    suspension_for,
    with_suspension,
)
from gitgate.karmada.syncsteps import HookStep
from gitgate.karmada.waves import Step
from gitgate.memo import Memo, derive
from gitgate.model import (
    Bundle,
    BundleVerdict,
    GateText,
    Hashed,
    HoldReason,
    InvalidGate,
    Manifest,
    ObjectRef,
    Problem,
    RenderedSource,
    Verdict,
    join,
)
from gitgate.model.claims import Holders
from gitgate.model.kindscope import ScopeTable
from gitgate.model.ownership import DEFAULT_INSTANCE
from gitgate.model.rolloutspec import Members
from gitgate.model.tenantspec import Tenancy
from gitgate.source.config import REPO_CONFIG


@dataclass(frozen=True)
class BundlePlan:
    bundle: Bundle
    verdict: BundleVerdict
    desired: tuple[Manifest, ...]  # the objects to write when open (suspension applied)
    policies: tuple[Manifest, ...]
    rollout: Step | None = None  # where the bundle's rollout is (with `rollout` configured)
    hooks: HookStep | None = None  # where the sync of a bundle with hooks is
    kept: tuple[ObjectRef, ...] = ()  # inventory entries this pass neither writes nor prunes
    instance: str = DEFAULT_INSTANCE  # the gitgate that writes it (its policies' names)

    @cached_property
    def written(self) -> tuple[Hashed, ...]:
        """What an open pass writes (templates, then policies), each with its ref and content
        hash, worked out once per plan (a plan memoised from the last pass keeps them)."""
        return tuple(Hashed.of(o) for o in (*self.desired, *self.policies))

    @cached_property
    def _written_by_id(self) -> dict[int, Hashed]:
        return {id(h.obj): h for h in self.written}

    def hashed(self, obj: Manifest) -> Hashed:
        """`obj` with its ref and hash: from `written` when it is one of those objects, else
        worked out (a policy rewritten with a suspension step, say)."""
        found = self._written_by_id.get(id(obj))
        return found if found is not None and found.obj is obj else Hashed.of(obj)


@dataclass(frozen=True)
class FrozenLive:
    """An object live in a held bundle, as its record knows it: its apiVersion and live
    labels (None: unknown, a record of an earlier release), the bundle and the freeze."""

    ref: ObjectRef
    api_version: str | None
    labels: Mapping[str, str] | None
    holder: str
    why: HoldReason


@dataclass(frozen=True)
class Plan:
    revision: str
    at: datetime
    bundles: tuple[BundlePlan, ...]
    gates: tuple[GateState, ...]
    invalid_gates: tuple[InvalidGate, ...]
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...] = ()
    # the repo's bundles this plan leaves to another pass: outside `--bundle`, or another
    # replica's shard (`run --shard`); a bundle here may depend on them
    elsewhere: frozenset[str] = frozenset()
    # this plan's bundles that bundles `elsewhere` depend on, directly or through one
    # another: written first, records included, so another replica does not wait this pass
    awaited: frozenset[str] = frozenset()
    # the repo's `PAUSE` files: folder -> reason (a freeze of what was live from that folder)
    pauses: Mapping[str, str] = field(default_factory=dict)
    # bundles that left Git but whose objects a freeze keeps live (`progression.livefreeze`)
    live_holds: Mapping[str, tuple[HoldReason, ...]] = field(default_factory=dict)
    # the held and suspended bundles `elsewhere`: what they claim and use stays frozen for
    # this plan's bundles too
    outside: tuple[BundlePlan, ...] = ()
    # the objects live in held bundles, as their records know them: no override may act on
    # them, be it written or deleted (`progression.livefreeze`)
    frozen_live: tuple[FrozenLive, ...] = ()
    # every bundle a freeze holds or suspends now, by name or as it is live, with the first
    # reason: what their live objects carry as `gitgate.io/bundle` no other bundle writes
    # (`progression.liveowners`)
    frozen_bundles: Mapping[str, HoldReason] = field(default_factory=dict)


def awaited_by(needs: dict[str, tuple[str, ...]], elsewhere: Collection[str],
               kept: Collection[str]) -> frozenset[str]:
    """Of the bundles `kept` (this pass's), those a bundle `elsewhere` depends on, directly
    or through kept ones (`needs`: each bundle's `dependsOn`). Pure."""
    found: set[str] = set()
    frontier = [need for name in elsewhere for need in needs.get(name, ())]
    while frontier:
        name = frontier.pop()
        if name in kept and name not in found:
            found.add(name)
            frontier += needs.get(name, ())
    return frozenset(found)


def misplaced_gates(rendered: tuple[RenderedSource, ...],
                    tenancy: Tenancy | None = None) -> list[InvalidGate]:
    """A Gate in a source folder is not read as a gate, yet whoever wrote it expects it to
    hold: it holds every bundle until moved into the gates folder (fail closed). In a
    tenant's folder, every bundle of that tenant: a tenant cannot freeze the others."""
    out = []
    for r in rendered:
        owners = tenants_of(r.source.path, tenancy) if tenancy is not None else []
        within = owners[0].paths if len(owners) == 1 else ()
        out += [InvalidGate(r.source.path, (
            f"a {o.get('kind')} {o.get('metadata', {}).get('name')!r} ({o.get('apiVersion')}) "
            f"is in the source {r.source.path}, outside the gates folder: gitgate does not read "
            "gates there; move it to the gates folder"), within=within)
            for o in r.objects if str(o.get("apiVersion", "")).startswith("gitgate.io/")]
    return out


def make_plan(rendered: tuple[RenderedSource, ...], gate_texts: dict[str, GateText],
              now: datetime, revision: str, problems: tuple[Problem, ...] = (),
              warnings: tuple[Problem, ...] = (), memo: Memo | None = None,
              tenancy: Tenancy | None = None, members: Members | None = None,
              mine: Callable[[str], bool] | None = None, scopes: ScopeTable | None = None,
              holders: Holders | None = None, instance: str = DEFAULT_INSTANCE) -> Plan:
    """With a `memo`, a bundle with the same objects and verdict as in the last pass keeps
    its plan, and with it the content hashes its writes are compared by. `tenancy`: the
    rules of gitgate.yaml's `tenants` (bundles that break them fail); `members`: Karmada's
    Clusters, for tenants that choose theirs by labels (None: not read, and a warning).
    `mine` (`run --shard`): the bundles this replica writes; the others are judged with the
    rest (their verdicts, their warnings) but get no objects to write nor policies.
    `scopes`: which kinds are namespaced, as rendering judged them; `holders`: what the
    Bundle records hold live (a bundle name two folders claim stays with its holder);
    `instance`: the gitgate that writes the plan (its generated policies' names)."""
    grouped_bundles, lost = grouped(rendered, memo, tenancy, members, scopes, holders)
    bundles = list(grouped_bundles)
    problems += tuple(p for p in lost if p not in problems)
    if members is None:
        warnings += tuple(Problem(".", said, REPO_CONFIG, reason=Reason.OUTSIDE_TENANT)
                          for said in unjudged(tenancy))
    gates, invalid = parse_gates(gate_texts)
    invalid += misplaced_gates(rendered, tenancy)
    verdicts = evaluate(bundles, gates, invalid, now, memo)
    plans = [derive(memo, "plan", bundle, (verdicts[bundle.name], instance),
                    partial(bundle_plan, bundle, verdicts[bundle.name], instance))
             if mine is None or mine(bundle.name) else
             BundlePlan(bundle, verdicts[bundle.name], (), (), instance=instance)
             for bundle in bundles]
    return Plan(revision, now, tuple(plans), tuple(gate_states(gates, bundles, now)),
                tuple(invalid), problems, warnings + tuple(
                    problem for item in plans if (problem := unplaced(item)) is not None))


def unplaced(item: BundlePlan) -> Problem | None:
    """A bundle that reaches no member cluster: it has objects Karmada would propagate, but
    neither a placement nor a propagation policy of its own places them (and it does not say
    `placement: none`). Karmada keeps them on the control plane without a word."""
    bundle = item.bundle
    options = bundle.source.options
    if options.unplaced or options.placement is not None or bundle.failed or any(
            is_policy(o) for o in bundle.objects):
        return None
    carried = [ObjectRef.of(o) for o in bundle.objects
               if not is_control_plane(o) and propagated(ObjectRef.of(o))]
    if not carried:
        return None  # Namespaces only (Karmada's namespace controller sends them), or none
    return Problem(bundle.source.path, (
        f"bundle {bundle.name} reaches no member cluster: nothing places its "
        f"{len(carried)} object(s) (e.g. {carried[0]}); set `placement` in its bundle.yaml or "
        "`defaults.placement` in gitgate.yaml, or `placement: none` if it stays on the "
        "control plane on purpose"), join(bundle.source.path, "bundle.yaml"),
        reason=Reason.NOT_PLACED)


def destination(item: BundlePlan) -> str:
    """Where the bundle goes, in a few words (plan's CLUSTERS): the member clusters its
    placement names, the labels it selects clusters by, `its policies` when the bundle holds
    its own, `all members` for Namespaces alone (Karmada sends them), `control plane` for
    `placement: none`, `none` when nothing places it."""
    bundle = item.bundle
    options = bundle.source.options
    if bundle.failed:
        return "-"
    if options.unplaced:
        return "control plane"
    if unplaced(item) is not None:
        return "none"
    carried = [o for o in bundle.objects
               if not is_control_plane(o) and propagated(ObjectRef.of(o))]
    if not carried:  # Namespaces (Karmada sends them itself), or policies alone
        return "all members" if any(o.get("kind") == "Namespace" and "/" not in str(
            o.get("apiVersion")) for o in bundle.objects) else "control plane"
    if any(is_policy(o) for o in bundle.objects):
        words = "its policies"
    else:
        words = _placement_words(options.placement or {})
    suspended = item.verdict.suspend_clusters
    if item.verdict.verdict is Verdict.SUSPENDED:
        words += " (all suspended)" if suspended is None else \
            f" ({','.join(suspended)} suspended)"
    return words


def _placement_words(placement: Manifest) -> str:
    affinities = [placement.get("clusterAffinity") or {}] + [
        a for a in placement.get("clusterAffinities") or [] if isinstance(a, dict)]
    said = []
    for affinity in affinities:
        names = affinity.get("clusterNames") or []
        labels = ((affinity.get("labelSelector") or {}).get("matchLabels") or {})
        if names:
            said.append(",".join(str(n) for n in names))
        elif labels:
            said.append("labels " + ",".join(f"{k}={v}" for k, v in sorted(labels.items())))
    return " | ".join(said) or "by placement"


def bundle_plan(bundle: Bundle, verdict: BundleVerdict,
                instance: str = DEFAULT_INSTANCE) -> BundlePlan:
    """What the bundle writes under `verdict`: its objects (suspended as the verdict says) and
    its generated policies, named for `instance`."""
    policies = [*generated_policies(bundle, bundle.source.options.placement, verdict, instance),
                *generated_overrides(bundle, instance)]
    desired = with_suspension(bundle.objects, verdict)
    return BundlePlan(bundle, verdict, tuple(desired), tuple(policies), instance=instance)


def with_verdict(item: BundlePlan, verdict: BundleVerdict) -> BundlePlan:
    """`item` under another verdict: a step of its progression (a rollout that keeps more
    clusters suspended, or halts) decides the suspension and nothing else. The bundle keeps
    everything it owns as `bundle_plan` has it (its objects, repo overrides among them, its
    generated policies and per-cluster OverridePolicies); only the suspension its
    propagation policies carry follows the verdict, and when that is unchanged so are its
    objects. A plan with nothing to write (another replica's bundle) still writes nothing.
    Where its progression is (rollout, hooks, kept entries) stays."""
    if suspension_for(verdict) == suspension_for(item.verdict) or not (
            item.desired or item.policies):
        return replace(item, verdict=verdict)
    owned = bundle_plan(item.bundle, verdict, item.instance)
    return replace(item, verdict=verdict, desired=owned.desired, policies=owned.policies)
