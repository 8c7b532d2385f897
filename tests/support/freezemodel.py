"""A reference model of gitgate's promise over a repo of raw-YAML apps, written from the
README's rules alone (it imports nothing of gitgate): which bundles a commit has, which of
them a freeze holds as the commit names them and as they are live, which objects no pass may
write, and what the cluster holds once nothing is frozen.

The repo: a tenant's folder of ConfigMaps in its own namespace, which may reach out of it
(README "Tenants": the bundle then fails and nothing of it is written); apps, each a folder
of ConfigMaps with an optional bundle.yaml (a name, a `team`
label, a `dependsOn`, a `clusters:` entry changing every ConfigMap's value on one member); a
`PAUSE` file in a folder; gates holding or suspending bundles by name or by label, some until
a time, some with approvals (`gitgate approve`: a digest of the bundle's content, which the
model knows as the content itself); a parent kustomization (`apps/kustomization.yaml`) that
takes in every app folder below `apps/`; a `platform/` folder of OverridePolicies, each
changing one ConfigMap on the other member.

Objects are named by one string: a ConfigMap by its name, the bundle's own OverridePolicy
that a `clusters:` entry makes (README "Per-cluster changes": `gitgate-<bundle>.<kind>.<name>`)
as `op/<its name>`, a platform OverridePolicy as `pop/<its name>`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

MEMBERS = ("member1", "member2")  # the member clusters every bundle is placed on
CUSTOMIZED = "member2"  # the member a bundle's `clusters:` entry changes
OVERRIDDEN = "member1"  # the member the platform's OverridePolicies change
PLATFORM = "platform"  # the folder (and bundle) of the platform's OverridePolicies
# an app's `rollout:` (README "Progressive rollouts"): these waves, this bake, and
# progressDeadline's default (10m)
WAVES = ((MEMBERS[0],), (MEMBERS[1],))
BAKE = timedelta(hours=4)
DEADLINE = timedelta(minutes=10)


def override_key(bundle: str, obj: str) -> str:
    """The OverridePolicy a bundle's `clusters:` entry makes for its ConfigMap `obj`."""
    return f"op/gitgate-{bundle}.configmap.{obj}"


def platform_key(target: str) -> str:
    """The platform's OverridePolicy that acts on the ConfigMap `target`."""
    return f"pop/p-{target}"


def target_of(key: str) -> str | None:
    """The ConfigMap a platform OverridePolicy selects (None: not one)."""
    return key.removeprefix("pop/p-") if key.startswith("pop/p-") else None


def workload_key(folder: str) -> str:
    """The Deployment a rolling app carries on a real Karmada (the health its member reports:
    Karmada interprets none for a ConfigMap)."""
    return f"w:{folder}"


def is_configmap(key: str) -> bool:
    return "/" not in key


@dataclass(frozen=True)
class Identity:
    name: str
    team: str | None
    folder: str


@dataclass
class App:
    folder: str
    objects: dict[str, str]  # ConfigMap name -> value
    name: str | None = None  # bundle.yaml's name
    team: str | None = None
    present: bool = True  # its manifests are in the repo
    custom: str | None = None  # `clusters:`: every ConfigMap's value on CUSTOMIZED
    depends_on: str | None = None  # `dependsOn: [this bundle]`
    rollout: bool = False  # `rollout:` waves [member1], [member2] with a bake


@dataclass
class Record:
    identity: Identity
    objects: set[str]
    suspended: bool = False  # its live policy carries a suspension
    applied: bool = True  # it went out once (a write-ahead record alone: not yet)
    waiting_on: frozenset[str] = frozenset()  # members its rollout has not released


# What an approval lets through: the bundle's name, objects (its own overrides too), label,
# dependsOn and the platform's overrides acting on it (README: the digest covers the rendered
# objects, placement, labels, dependsOn, rollout, and the overrides acting on the bundle).
Content = tuple[str, tuple[tuple[str, str], ...], str | None, str | None,
                tuple[tuple[str, str], ...], bool]


@dataclass(frozen=True)
class GateSpec:
    """A gate file: it selects a bundle `name`, or the bundles labelled `team`."""

    by: str  # "name" or "team"
    value: str
    action: str = "hold"  # or "suspend" (every cluster)
    until: datetime | None = None
    # `approve:` entries: (bundle, digest gitgate wrote, the content the model approved)
    approvals: tuple[tuple[str, str, Content], ...] = ()

    def active(self, now: datetime) -> bool:
        return self.until is None or now < self.until

    def selects(self, identity: Identity) -> bool:
        return identity.name == self.value if self.by == "name" else identity.team == self.value

    def approves(self, name: str, content: Content | None) -> bool:
        return content is not None and any(b == name and c == content
                                           for b, _, c in self.approvals)


@dataclass(frozen=True)
class Rollout:
    """Where a bundle's rollout is (README "Progressive rollouts"): the content it rolls
    out, the wave being released (len(WAVES): complete), when that wave was released or a
    gate over it lifted, since when every released member is ready, and why it halted
    ("unhealthy": turned Unhealthy while baking; "deadline": not ready by progressDeadline).
    `unknown`: a freeze stopped the bundle mid-pass, so the model does not know how far its
    rollout got until its content changes again."""

    content: Content
    wave: int
    started: datetime
    ready_since: datetime | None = None
    halted: str = ""
    unknown: bool = False

    def complete(self) -> bool:
        return self.wave >= len(WAVES)

    def released(self) -> set[str]:
        if self.complete():
            return set(MEMBERS)
        return {m for wave in WAVES[:self.wave + 1] for m in wave}

    def waiting_on(self) -> frozenset[str]:
        """The members kept on the last released version (dispatch suspended)."""
        return frozenset(m for m in MEMBERS if m not in self.released())


@dataclass
class Repo:
    """What a commit holds, as the model reads it."""

    apps: dict[int, App] = field(default_factory=dict)
    pauses: set[str] = field(default_factory=set)  # folders with a PAUSE file
    gates: dict[str, GateSpec] = field(default_factory=dict)  # by file name
    swallowed: bool = False  # apps/kustomization.yaml takes in the folders below apps/
    platform: dict[str, str] = field(default_factory=dict)  # ConfigMap -> value on OVERRIDDEN
    now: datetime = datetime(2026, 11, 18, 12, tzinfo=UTC)
    # the tenant's folder (TENANT_FOLDER, its own namespace): ConfigMap -> value, and how it
    # reaches out of its tenancy: None, "namespace" (a ConfigMap in the apps' namespace) or
    # "cluster-override" (a ClusterOverridePolicy acting on an app's ConfigMap)
    tenant: dict[str, str] = field(default_factory=lambda: {"t0-c0": "v0", "t0-c1": "v0"})
    trespass: str | None = None


@dataclass(frozen=True)
class Bundle:
    identity: Identity
    objects: dict[str, str]
    depends_on: str | None = None
    rollout: bool = False


def bundle_name(folder: str) -> str:
    return folder.replace("/", "-")


TENANT_FOLDER = "tenant/t0"  # the tenant's one folder; its namespace is the apps' + "-t"
TENANT = bundle_name(TENANT_FOLDER)


def tenant_key(name: str) -> str:
    """A ConfigMap of the tenant's own namespace."""
    return f"t:{name}"


def tenant_bundle(repo: Repo) -> Bundle:
    return Bundle(Identity(TENANT, None, TENANT_FOLDER),
                  {tenant_key(k): v for k, v in repo.tenant.items()})


def bundles_of(repo: Repo) -> list[Bundle]:
    """The commit's bundles: each app folder (with its `clusters:` overrides), or `apps` for
    every app folder below `apps/` while the parent kustomization takes them in (their
    bundle.yaml files are then not read: a kustomize folder is one source); and `platform`
    while it has an OverridePolicy."""
    out: list[Bundle] = []
    parent: dict[str, str] = {}
    for app in sorted(repo.apps.values(), key=lambda a: a.folder):
        if not app.present:
            continue
        if repo.swallowed and app.folder.startswith("apps/"):
            parent.update(app.objects)
            continue
        name = app.name or bundle_name(app.folder)
        objects = dict(app.objects)
        if app.custom is not None:
            objects.update({override_key(name, o): app.custom for o in app.objects})
        out.append(Bundle(Identity(name, app.team, app.folder), objects, app.depends_on,
                          app.rollout))
    if parent:
        out.append(Bundle(Identity("apps", None, "apps"), parent))
    if repo.platform:
        out.append(Bundle(Identity(PLATFORM, None, PLATFORM),
                          {platform_key(t): v for t, v in repo.platform.items()}))
    if repo.trespass is None:  # README "Tenants": else it fails, and nothing of it is written
        out.append(tenant_bundle(repo))
    return out


def content_of(bundle: Bundle, bundles: list[Bundle]) -> Content:
    acting = sorted((k, v) for b in bundles for k, v in b.objects.items()
                    if target_of(k) in bundle.objects)
    return (bundle.identity.name, tuple(sorted(bundle.objects.items())), bundle.identity.team,
            bundle.depends_on, tuple(acting), bundle.rollout)


def paused(folder: str, repo: Repo) -> bool:
    """A `PAUSE` file holds every source at or below its folder."""
    parts = folder.split("/")
    return any("/".join(parts[:n]) in repo.pauses for n in range(1, len(parts) + 1))


def covered(identity: Identity, repo: Repo, action: str | None = None,
            content: Content | None = None) -> bool:
    """Whether a freeze covers `identity` (with `action`: a gate of that action, or for
    "hold" a `PAUSE` file too). `content`: the commit's content of the bundle of that name,
    which a gate's approval of it lets through."""
    if paused(identity.folder, repo) and action in (None, "hold"):
        return True
    return any(g.active(repo.now) and g.selects(identity) and action in (None, g.action)
               and not g.approves(identity.name, content) for g in repo.gates.values())


@dataclass
class Judgement:
    """What one pass over a commit may do, by the model."""

    open: list[Bundle]  # bundles whose objects are written
    suspended: set[str]  # of those, the ones whose policy carries a suspension
    blocked: list[Bundle]  # held or refused: nothing of them is written
    frozen: set[str]  # objects no write or delete may touch (but their own suspended bundle's)
    gone: list[str]  # records whose bundle left Git and nothing keeps
    claimed: set[str]  # every object a bundle of the commit has: never deleted
    by_record: set[str] = field(default_factory=set)  # suspended as live, not as committed
    held: set[str] = field(default_factory=set)  # of the blocked, those a freeze holds
    waiting: dict[str, str] = field(default_factory=dict)  # open but for a dependency: why
    # platform overrides acting on a held or frozen bundle: neither written nor deleted
    kept: set[str] = field(default_factory=set)
    contents: dict[str, Content] = field(default_factory=dict)
    # bundles that fail whatever the freezes (a tenant reaching out of its tenancy): nothing
    # of them is written or pruned, their records stay as they were
    refused: set[str] = field(default_factory=set)
    rollouts: dict[str, Rollout] = field(default_factory=dict)  # after this pass, by bundle


# the kinds of reason a record gives first, as README "Status" names them
HOLDING_KINDS = frozenset({"gate", "pause-file", "invalid-gate", "frozen"})


@dataclass(frozen=True)
class Standing:
    """What a bundle's record says after a pass: its verdict (one of `also` too), and the
    kinds its first reason may be (empty: any; for an open bundle, none that holds)."""

    verdict: str
    first: frozenset[str] = frozenset()
    also: frozenset[str] = frozenset()

    def verdicts(self) -> frozenset[str]:
        return self.also | {self.verdict}


def standings(repo: Repo, judgement: Judgement, records: dict[str, Record]) -> dict[
        str, Standing]:
    """Each bundle of the commit as its record says it stands after the pass: open, suspended
    (by a gate), held (by the `PAUSE` file or the gate that covers it, as the commit names
    it or as it is live), refused (it would write or prune an object frozen for another:
    failed, `frozen` first), waiting for a dependency (failed)."""
    out: dict[str, Standing] = {}
    suspended = judgement.suspended
    for b in judgement.open:
        name = b.identity.name
        rollout = judgement.rollouts.get(name)
        if b.rollout and (rollout is None or rollout.unknown):  # as far as it got
            out[name] = Standing("apply", frozenset({"rollout", "gate", "approved"}),
                                 frozenset({"suspended", "halted"}))
        elif b.rollout and name in suspended:  # a gate takes over the rollout and its halt
            out[name] = Standing("suspended", frozenset({"gate"}))
        elif rollout is not None and rollout.halted:
            out[name] = Standing("halted", frozenset({"rollout"}))
        elif rollout is not None and rollout.waiting_on():  # later waves keep the old version
            out[name] = Standing("suspended", frozenset({"rollout", "approved"}))
        elif rollout is not None:  # the last wave released, or done: nothing suspended
            out[name] = Standing("apply", frozenset({"rollout", "approved"}))
        else:
            out[name] = Standing("suspended", frozenset({"gate"})) if name in suspended else (
                Standing("apply"))
    for name in judgement.waiting:
        out[name] = Standing("failed")
    for name in judgement.refused:
        if name in records:  # a bundle that never went out has no record to say so
            out[name] = Standing("failed")
    for b in judgement.blocked:
        name = b.identity.name
        if name not in judgement.held:
            out[name] = Standing("failed", frozenset({"frozen"}))
            continue
        record = records.get(name)
        identities = [b.identity] + ([record.identity] if record is not None else [])
        kinds = set()
        if any(paused(i.folder, repo) for i in identities):
            kinds.add("pause-file")
        if any(g.active(repo.now) and g.action == "hold" and g.selects(i)
               for g in repo.gates.values() for i in identities):
            kinds.add("gate")
        out[name] = Standing("held", frozenset(kinds))
    return out


class Model:
    """The records the model keeps: per bundle name, the identity it was last open under and
    the objects it has live; and what is live."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.live: dict[str, str] = {}  # the templates and overrides on the control plane
        # what each member cluster runs: a ConfigMap's value there
        self.member: dict[str, dict[str, str]] = {m: {} for m in MEMBERS}
        self.rollouts: dict[str, Rollout] = {}  # kept in each rolling bundle's record
        # what member clusters report of a ConfigMap: (ConfigMap, member) -> Unhealthy; a
        # ConfigMap is Healthy once applied (a kind Karmada interprets no health for)
        self.unhealthy: set[tuple[str, str]] = set()
        self.workloads = False  # rolling apps carry a Deployment (on a real Karmada)
        # the members a ConfigMap's last claiming policy kept back (all: a suspension): a
        # template no policy claims any more keeps the binding it had
        self.held_back: dict[str, frozenset[str]] = {}

    def judge(self, repo: Repo) -> Judgement:
        bundles = bundles_of(repo)
        names = {b.identity.name for b in bundles} | ({TENANT} if repo.trespass else set())
        contents = {b.identity.name: content_of(b, bundles) for b in bundles}
        frozen_records = {name for name, record in self.records.items()
                          if covered(record.identity, repo, None, contents.get(name))}

        def freezing(identity: Identity, action: str) -> bool:
            record = self.records.get(identity.name)
            content = contents.get(identity.name)
            return covered(identity, repo, action, content) or (
                record is not None and covered(record.identity, repo, action, content))

        held_now = {b.identity.name for b in bundles if freezing(b.identity, "hold")}
        suspended_now = {b.identity.name for b in bundles
                         if b.identity.name not in held_now and freezing(b.identity, "suspend")}
        frozen: dict[str, set[str]] = {}  # object -> the bundles it is frozen for
        for name in frozen_records:
            for obj in self.records[name].objects:
                frozen.setdefault(obj, set()).add(name)
        for b in bundles:
            if b.identity.name in held_now:
                for obj in b.objects:
                    frozen.setdefault(obj, set()).add(b.identity.name)
            if b.identity.name in held_now | suspended_now and b.identity.name in self.records:
                for obj in self.records[b.identity.name].objects:
                    frozen.setdefault(obj, set()).add(b.identity.name)
        open_, blocked = [], []
        for b in bundles:
            name = b.identity.name
            record = self.records.get(name)
            leftovers = (record.objects - set(b.objects)) if record else set()
            touched = set(b.objects) | leftovers
            if name in held_now or any(frozen.get(o, set()) - {name} for o in touched):
                blocked.append(b)
            else:
                open_.append(b)
        # a suspended bundle writes its own templates (the suspension in its policy first)
        own = {o for b in open_ for o in (set(b.objects) | (
            self.records[b.identity.name].objects if b.identity.name in self.records else set()))
            if frozen.get(o) == {b.identity.name}}
        frozen_now = set(frozen) - own
        # README "Per-cluster changes": an OverridePolicy in another folder is held with a
        # held bundle it acts on, and a freeze covers what acts on a frozen object
        stopped = {o for b in blocked for o in b.objects if is_configmap(o)}
        platform = self.records.get(PLATFORM)
        acting = set(platform.objects if platform else ()) | {
            k for b in bundles for k in b.objects if target_of(k) is not None}
        kept = {k for k in acting if (t := target_of(k)) in frozen_now or t in stopped}
        waiting = self._waiting(bundles, open_, {b.identity.name for b in blocked}, held_now)
        open_ = [b for b in open_ if b.identity.name not in waiting]
        claimed_blocked = {o for b in blocked for o in b.objects}
        gone = [name for name, record in self.records.items()
                if name not in names and name not in frozen_records
                and not any(frozen.get(o, set()) - {name} for o in record.objects)
                and not record.objects & claimed_blocked]
        suspended = {b.identity.name for b in open_} & suspended_now
        # suspended through the identity it is live under alone: its record keeps it
        by_record = {b.identity.name for b in open_ if b.identity.name in suspended
                     and b.identity.name in self.records and any(
                         g.active(repo.now) and g.selects(self.records[b.identity.name].identity)
                         and not g.selects(b.identity) for g in repo.gates.values())}
        claimed = {o for b in bundles for o in b.objects}
        if repo.trespass:  # a failed bundle's objects are still in Git: never pruned
            claimed |= set(tenant_bundle(repo).objects)
        rollouts = {}
        for b in open_ + blocked:
            name = b.identity.name
            gated = name in held_now or name in suspended
            if b.rollout and (b in open_ or (gated and name in self.rollouts)):
                rollouts[name] = self.rolled(b, contents[name], gated, repo.now)
        return Judgement(open_, suspended, blocked, frozen_now, gone, claimed, by_record,
                         held_now, waiting, kept, contents,
                         refused={TENANT} if repo.trespass else set(), rollouts=rollouts)

    def rolled(self, bundle: Bundle, content: Content, gated: bool, now: datetime) -> Rollout:
        """One pass of a bundle's rollout (README "Progressive rollouts"). New content starts
        again from wave 1, released in this pass; a hold or suspend gate (or `PAUSE`) stops it
        where it is and takes over a halt, and the wave goes on with fresh timers once it
        lifts; a wave released (or whose gate lifted) in this pass is judged from the next
        pass on; then, every released member ready (a ConfigMap: applied and not reported
        Unhealthy, ready from the wave's release), the bake counts from then and the next
        wave is released once it is over; a wave that turns Unhealthy while baking, or is not
        ready by progressDeadline, halts (onFailure: hold): the later waves keep the last
        released version until a new commit."""
        state = self.rollouts.get(bundle.identity.name)
        if state is None or state.content != content:
            state = Rollout(content, 0, now)
        if state.complete() or state.unknown:
            return state
        if gated:
            return replace(state, started=now, ready_since=None, halted="")
        if state.halted or state.started == now:
            return state
        objects = [o for o in bundle.objects if is_configmap(o)] + [
            workload_key(bundle.identity.folder)]
        sick = any((o, m) in self.unhealthy for o in objects for m in state.released())
        if not sick:  # ready since the wave's release, as Karmada says for a ConfigMap; a
            # Deployment's reflected status says no time: since the first pass that saw it
            since = state.ready_since or (now if self.workloads else state.started)
            if now - since >= BAKE:
                return Rollout(content, state.wave + 1, now)
            return replace(state, ready_since=since)
        if state.ready_since is not None:
            return replace(state, halted="unhealthy")
        if now >= state.started + DEADLINE:
            return replace(state, halted="deadline")
        return state

    def _waiting(self, bundles: list[Bundle], open_: list[Bundle], blocked: set[str],
                 held: set[str]) -> dict[str, str]:
        """The open bundles that wait for a dependency (README "Applying to Karmada": a bundle
        goes out after the bundles it `dependsOn`): one the commit lacks, a cycle, one that
        fails or waits itself, one held that never went out. A held dependency that is live
        stops nothing."""
        needs = {b.identity.name: b.depends_on for b in bundles}
        waiting: dict[str, str] = {}
        for b in open_:
            seen, at = [b.identity.name], b.depends_on
            while at is not None and at in needs and at not in seen:
                seen.append(at)
                at = needs[at]
            if at is not None and at in seen:
                waiting[b.identity.name] = "cycle"
            elif b.depends_on is not None and b.depends_on not in needs:
                waiting[b.identity.name] = "unknown"
        changed = True
        while changed:
            changed = False
            for b in open_:
                name, need = b.identity.name, b.depends_on
                if name in waiting or need is None:
                    continue
                record = self.records.get(need)
                if need in waiting or (need in blocked and need not in held) or (
                        need in held and (record is None or not record.applied)):
                    waiting[name] = f"waits for {need}"
                    changed = True
        return waiting

    def newly_covered(self, older: Repo, newer: Repo) -> set[str]:
        """The bundles of `older` (and the records) that the freezes `newer` adds cover: a
        `PAUSE` file or a gate (new or changed, active) selecting them as the commit names
        them or as they are live, unless the gate approves their content (README "A freeze
        is checked at every write")."""
        fresh = Repo(apps=older.apps, swallowed=older.swallowed, platform=older.platform,
                     pauses=newer.pauses - older.pauses, now=older.now,
                     gates={f: g for f, g in newer.gates.items() if older.gates.get(f) != g})
        bundles = bundles_of(older)
        contents = {b.identity.name: content_of(b, bundles) for b in bundles}
        out = set()
        for b in bundles:
            name = b.identity.name
            record = self.records.get(name)
            if covered(b.identity, fresh, None, contents[name]) or (
                    record is not None and covered(record.identity, fresh, None,
                                                   contents[name])):
                out.add(name)
        out.update(name for name, record in self.records.items()
                   if name not in contents and covered(record.identity, fresh))
        return out

    def after_pass(self, judgement: Judgement, stopped: set[str] | None = None) -> None:
        """The records and live objects once a pass did what the model allows (but for the
        bundles in `stopped`, which a freeze stopped mid-pass: see `adopt`)."""
        kept = judgement.kept
        stopped = stopped or set()
        for b in judgement.open:
            if b.identity.name in stopped:
                continue
            for record in self.records.values():
                record.objects -= set(b.objects) - kept
        for name in judgement.gone:
            if name in stopped:
                continue
            record = self.records.pop(name)
            staying = record.objects & kept
            for obj in record.objects - judgement.claimed - staying:
                self.live.pop(obj, None)
            if staying:  # its live policy stays as it was: suspension, unreleased members
                self.records[name] = Record(record.identity, staying, record.suspended,
                                            record.applied, record.waiting_on)
        for b in judgement.open:
            name = b.identity.name
            if name in stopped:
                continue
            previous = self.records.get(name)
            suspended = name in judgement.suspended
            identity = (previous.identity if previous is not None and name in judgement.by_record
                        else b.identity)
            written = {k: v for k, v in b.objects.items() if k not in kept}
            objects = set(written)
            rollout = judgement.rollouts.get(name)
            if rollout is not None and rollout.unknown:  # as far as it got (`adopt`)
                waiting_on = previous.waiting_on if previous is not None else frozenset()
            else:
                waiting_on = rollout.waiting_on() if rollout is not None else frozenset()
            if previous is not None:
                objects |= previous.objects & kept
                # a suspended bundle (by a gate, or on the members its rollout has not
                # released: README "Progressive rollouts") deletes no template until that
                # lifts, and keeps what no open bundle took over
                if suspended or waiting_on:
                    objects |= previous.objects
                else:
                    for obj in previous.objects - judgement.claimed - kept:
                        self.live.pop(obj, None)
            self.records[name] = Record(identity, objects, suspended, waiting_on=waiting_on)
            self.live.update(written)
        for name, rollout in judgement.rollouts.items():
            if name not in stopped:
                self.rollouts[name] = rollout
        for b in judgement.open:
            if not b.rollout and b.identity.name not in stopped:
                self.rollouts.pop(b.identity.name, None)
        # a held bundle that never went out has a record too, of where and as what it was
        # held: moving or relabelling it does not lift that freeze (README "A freeze follows
        # what is live"); it goes once the bundle goes out or leaves Git
        in_git = {b.identity.name for b in judgement.open + judgement.blocked}
        for b in judgement.blocked:
            name = b.identity.name
            if name in judgement.held and name not in self.records and name not in stopped:
                self.records[name] = Record(b.identity, set(), applied=False)
        for name in [n for n, r in self.records.items() if not r.objects
                     and (r.applied or n not in in_git)]:
            del self.records[name]
        for name in [n for n in self.rollouts if n not in self.records]:
            del self.rollouts[name]
        self.dispatch()

    def adopt(self, name: str, record: Record | None, live: dict[str, str | None]) -> None:
        """A bundle a freeze stopped mid-pass is as far as it got: its record as gitgate
        left it, and its objects as they are (None: absent; the caller checked each has its
        old or its new content)."""
        if record is None:
            self.records.pop(name, None)
        else:
            self.records[name] = record
            for other, kept in self.records.items():
                if other != name:
                    kept.objects -= record.objects
        for key, value in live.items():
            if value is None:
                self.live.pop(key, None)
            else:
                self.live[key] = value
        self.dispatch()

    def dispatch(self) -> None:
        """What Karmada sends each member: every live ConfigMap with the overrides for that
        member; a member whose dispatch a bundle's policy suspends (a gate, or a rollout that
        has not released it) keeps what it had, also once that policy is gone and no other
        claims the template (a deleted template is deleted everywhere, and what was reported
        of it goes)."""
        owner = {o: r for r in self.records.values() for o in r.objects if is_configmap(o)}
        self.unhealthy = {(o, m) for o, m in self.unhealthy
                          if o in self.live or o.startswith("w:")}
        for obj in [o for o in self.held_back if o not in self.live]:
            del self.held_back[obj]
        for obj, record in owner.items():
            self.held_back[obj] = (frozenset(MEMBERS) if record.suspended
                                   else record.waiting_on)
        for member in MEMBERS:
            runs = {}
            for obj, value in self.live.items():
                if not is_configmap(obj):
                    continue
                record = owner.get(obj)
                if member in self.held_back.get(obj, ()):
                    if obj in self.member[member]:
                        runs[obj] = self.member[member][obj]
                    continue
                runs[obj] = self.on_member(obj, value, member, record)
            self.member[member] = runs

    def on_member(self, obj: str, value: str, member: str, record: Record | None) -> str:
        """A ConfigMap's value on `member`: the platform's override on OVERRIDDEN, its
        bundle's `clusters:` override on CUSTOMIZED."""
        if member == OVERRIDDEN:
            return self.live.get(platform_key(obj), value)
        # an OverridePolicy acts on the object it names whichever bundle has it now (one a
        # bundle keeps while its rollout holds its deletes back too); several: applied in
        # name order, the last one's value stays
        acting = sorted(k for k in self.live
                        if k.startswith("op/") and k.endswith(f".configmap.{obj}"))
        return self.live[acting[-1]] if acting else value
