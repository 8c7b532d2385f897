"""Suspension before templates: which policies a suspended bundle writes first, and the wait
until Karmada shows the suspension on every binding of the bundle's templates.

Karmada copies a policy's `spec.suspension` into each ResourceBinding / ClusterResourceBinding
it keeps for a template; its binding controller marks the Works of suspended clusters so that
they are not dispatched. A template written before that copy is dispatched everywhere, so the
engine writes no template of a suspended bundle until every existing binding agrees. A template
with no binding yet is safe: Karmada creates its binding from the policy, suspension included.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gitgate.apiserver.changeset import in_place
from gitgate.apiserver.ports import Reader
from gitgate.errors import GitgateError
from gitgate.karmada.binding import (
    WORK_API_VERSION,
    BindingRef,
    binding_of,
    same_suspension,
    suspension_of,
    widest,
)
from gitgate.karmada.bindingstatus import parse_binding
from gitgate.karmada.policy import is_policy
from gitgate.model import Manifest, ObjectRef

POLL_SECONDS = 0.25


@dataclass(frozen=True)
class SuspensionSteps:
    """For one suspended bundle: the policies to write before any template (carrying
    `first`, the widest of the live and the wanted suspension, so that no cluster is released
    early), the policies to write after the templates (narrowing `first` to what Git says),
    and the templates whose bindings must show `first` before templates are written."""

    first: Manifest
    before: tuple[Manifest, ...]
    after: tuple[Manifest, ...]
    templates: tuple[Manifest, ...]


@dataclass
class Lag:
    binding: BindingRef
    seen: str  # what the binding showed, or why it could not be read


@dataclass
class Confirmation:
    lagging: dict[str, list[Lag]] = field(default_factory=dict)  # per bundle, empty: confirmed
    interrupted: bool = False


def _with_suspension(policy: Manifest, suspension: Manifest) -> Manifest:
    out = copy.deepcopy(policy)
    out.setdefault("spec", {})["suspension"] = copy.deepcopy(suspension)
    return out


def plan_steps(objects: tuple[Manifest, ...], to_apply: tuple[Manifest, ...],
               wanted: Manifest, reader: Reader) -> SuspensionSteps:
    """`objects`: every object of the bundle, policies included, as Git wants them (its
    propagation policies carry `wanted`); `to_apply`: those that differ from the inventory."""
    policies = [o for o in objects if is_policy(o)]
    changed = {ObjectRef.of(o) for o in to_apply}
    live = {ObjectRef.of(p): reader.get(p["apiVersion"], p["kind"],
                                        p["metadata"].get("namespace", ""), p["metadata"]["name"])
            for p in policies}
    first: Manifest = wanted
    for policy in live.values():
        first = widest(first, suspension_of(policy)) or wanted
    narrowing = not same_suspension(first, wanted)
    before = []
    for policy in policies:
        ref, early = ObjectRef.of(policy), _with_suspension(policy, first)
        if not same_suspension(suspension_of(live[ref]), first):
            before.append(early)
        elif ref in changed and not (narrowing and in_place(early, live[ref])):
            before.append(early)  # new selectors: select new templates before they exist
    after = tuple(p for p in policies if narrowing)
    templates = tuple(o for o in objects if ObjectRef.of(o).group != "policy.karmada.io")
    return SuspensionSteps(first, tuple(before), after, templates)



def _seen(reader: Reader, ref: BindingRef, expected: Manifest) -> str | None:
    """None when the binding agrees with `expected` (or does not exist yet), else what it
    shows."""
    try:
        binding = reader.get(WORK_API_VERSION, ref.kind, ref.namespace, ref.name)
    except GitgateError as exc:
        return f"cannot be read: {exc.message}"
    if binding is None:
        return None
    actual = parse_binding(binding).suspension()
    if same_suspension(actual, expected):
        return None
    return f"spec.suspension is {actual or 'unset'}"


def await_suspension(reader: Reader, wanted: dict[str, tuple[Manifest, tuple[Manifest, ...]]],
                     timeout: float, stop: threading.Event | None = None,
                     sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> Confirmation:
    """Poll, for each bundle (name -> (expected suspension, templates)), the bindings of its
    templates until all agree or `timeout` seconds pass. Bindings once seen to agree are not
    read again."""
    pending: dict[str, list[BindingRef]] = {
        name: [b for b in (binding_of(t) for t in templates) if b is not None]
        for name, (_, templates) in wanted.items()}
    deadline = clock() + timeout
    result = Confirmation()
    while True:
        for name, refs in pending.items():
            lags = []
            for ref in refs:
                seen = _seen(reader, ref, wanted[name][0])
                if seen is not None:
                    lags.append(Lag(ref, seen))
            result.lagging[name] = lags
            pending[name] = [lag.binding for lag in lags]
        if not any(pending.values()) or clock() >= deadline:
            return result
        if stop is not None and stop.is_set():
            result.interrupted = True
            return result
        sleep(POLL_SECONDS)


def describe(lags: list[Lag], timeout: float) -> str:
    shown = "; ".join(f"{lag.binding}: {lag.seen}" for lag in lags[:5])
    more = f" (and {len(lags) - 5} more)" if len(lags) > 5 else ""
    return (f"Karmada did not show the suspension within {timeout:g}s on {len(lags)} "
            f"binding(s): {shown}{more}; no template of this bundle was written (raise "
            "--suspension-timeout if Karmada's controller-manager is slow, or check that it "
            "runs)")
