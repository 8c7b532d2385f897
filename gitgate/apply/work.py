"""What a pass works with: its options, each bundle's unit of work while the pass runs, and
the results it reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from gitgate.apiserver.changeset import WRITES, ChangeKind, ChangeSet
from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import suspension
from gitgate.apply.inventory import DEFAULT_INSTANCE, Diff, Entry, Inventory
from gitgate.apply.transitions import Transition
from gitgate.karmada.policy import GROUP as POLICY_GROUP
from gitgate.model import Hashed, Manifest, ObjectRef
from gitgate.model.ownership import Origin
from gitgate.plan import BundlePlan
from gitgate.progression.analysis import Measure
from gitgate.progression.liveowners import Holder, OwnerFreezes


class RecordStore(Protocol):
    """The records a pass writes, as the engine sees them (`apply.ledger.Ledger`, handed to
    it by its caller): written ahead of the objects, after them, and deleted; what they are
    after the pass (`known`, while `certain`), and the events written (`emitted`)."""

    known: dict[str, Inventory]
    certain: bool
    emitted: list[tuple[str, Transition]]

    def ensure_home(self, cluster: ClusterPort) -> None: ...

    def write_ahead(self, cluster: ClusterPort, inventory: Inventory) -> None: ...

    def write(self, cluster: ClusterPort, inventory: Inventory,
              events: Sequence[Transition] = ()) -> None: ...

    def delete(self, cluster: ClusterPort, name: str, instance: str) -> None: ...


@dataclass(frozen=True)
class ApplyOptions:
    now: datetime
    dry_run: bool = False
    force_conflicts: bool = False
    allow_mass_prune: bool = False
    resync: timedelta = timedelta(minutes=10)
    instance: str = DEFAULT_INSTANCE  # several gitgates on one API server keep apart
    # the repo and folder the pass applies (unknown: the ownership of the instance is not
    # checked, and records keep the origin they have); `adopt`: take the instance over from
    # the repo that owns it (`apply.instanceowner`)
    origin: Origin = field(default_factory=Origin)
    adopt: bool = False
    suspension_timeout: timedelta = timedelta(seconds=30)  # wait for Karmada's bindings
    concurrency: int = 8  # API requests in flight at once within a stage (1: one by one)
    hook_timeout: timedelta = timedelta(minutes=10)  # how long a sync step may take
    actor: str = "cli"  # who runs the pass, for the history: `loop` (gitgate run) or `cli`
    # with --shard: asked before each record that only follows the new revision; once it
    # says the assignment moved, those are left to the pass over the new share (which
    # writes them again: they still differ from what is recorded), so a takeover does not
    # queue behind thousands of them
    share_moved: Callable[[], bool] | None = None
    # asked before each write and delete of a bundle's objects: why a freeze committed after
    # the pass began now covers that bundle (None: it does not); from then on nothing more
    # of it is written or pruned in this pass
    late_freeze: Callable[[str], str | None] | None = None
    # how a rollout's analysis queries Prometheus (None: not at all; a wave with an analysis
    # then waits on what earlier passes measured)
    measure: Measure | None = None

    def frozen_late(self, bundle: str) -> str | None:
        return None if self.late_freeze is None else self.late_freeze(bundle)


@dataclass
class BundleResult:
    bundle: str
    verdict: str
    reason: str = ""
    message: str = ""
    changes: ChangeSet = field(default_factory=ChangeSet)  # from the server's answers
    kept: list[ObjectRef] = field(default_factory=list)  # prune disabled by annotation
    # left Git, but the live object is not marked as this bundle's (or is gitgate's own):
    # never deleted, no longer tracked
    not_owned: list[ObjectRef] = field(default_factory=list)
    prune_failed: list[ObjectRef] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # deletes that wait for another bundle
    failed: bool = False

    def fail(self, reason: str, message: str) -> None:
        """The bundle failed this pass, for `reason` (one of `errors.Reason`)."""
        self.failed, self.reason, self.message = True, reason, message

    @property
    def applied(self) -> list[ObjectRef]:
        """Objects this pass wrote (created, configured or recreated)."""
        return self.changes.refs(*WRITES)

    @property
    def pruned(self) -> list[ObjectRef]:
        return self.changes.refs(ChangeKind.DELETED)

    @property
    def recreated(self) -> list[ObjectRef]:
        return self.changes.refs(ChangeKind.RECREATED)

    @property
    def unchanged(self) -> int:
        return self.changes.count(ChangeKind.UNCHANGED)


@dataclass
class PassResult:
    revision: str
    bundles: list[BundleResult]
    prune_blocked: bool = False
    inventories_written: int = 0
    dry_run: bool = False  # a server-side dry run: nothing was written
    # every inventory as it stands after the pass (None when a write or delete of one failed:
    # then only a read can tell); the loop shows status from it without reading them again
    inventories: dict[str, Inventory] | None = None
    # what changed for each bundle (the events on their Bundles), for notifications
    transitions: list[tuple[str, Transition]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.prune_blocked and not any(b.failed for b in self.bundles)

    def changed(self) -> set[str] | None:
        """The bundles whose dispatch this pass may have changed: written, pruned, failed or
        moved to another state. None when its changes may act on other bundles too (a
        Karmada policy written or deleted selects by labels, across bundles) or nothing was
        written (a dry run)."""
        if self.dry_run:
            return None
        names: set[str] = set()
        for result in self.bundles:
            touched = result.applied + result.pruned
            if any(ref.group == POLICY_GROUP for ref in touched):
                return None
            if touched or result.failed:
                names.add(result.bundle)
        # a new revision is an Apply transition for every bundle: what it wrote is above
        return names | {name for name, t in self.transitions if t.action != "Apply"}


@dataclass
class BundleWork:
    plan: BundlePlan | None  # None for a bundle that left Git (only its inventory remains)
    previous: Inventory | None
    diff: Diff | None
    result: BundleResult
    entries: dict[ObjectRef, Entry]
    resync: bool = False
    wrote: bool = False
    steps: suspension.SuspensionSteps | None = None  # a suspended bundle's policy-first writes
    resync_only: frozenset[ObjectRef] = frozenset()  # sent only because a resync is due
    live: dict[ObjectRef, Manifest | None] = field(default_factory=dict)  # read for a resync
    blocked: list[str] = field(default_factory=list)  # overrides left out, and why
    # dry run: objects the server could not check, as what they need is created by this pass
    unchecked: list[ObjectRef] = field(default_factory=list)
    # objects to write that another gitgate instance labels as its own (ref -> instance),
    # and those whose owner could not be listed (read one by one before their write)
    foreign: dict[ObjectRef, str] = field(default_factory=dict)
    owner_unread: set[ObjectRef] = field(default_factory=set)
    # the pass's freezes by live bundle label, when one could hold what this bundle writes
    # (`apply.owners`), and the objects to write that are live in a frozen bundle
    freezes: OwnerFreezes | None = None
    frozen: dict[ObjectRef, Holder] = field(default_factory=dict)

    def hashed(self, obj: Manifest) -> Hashed:
        return self.plan.hashed(obj) if self.plan is not None else Hashed.of(obj)
