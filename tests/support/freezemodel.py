"""A reference model of gitgate's promise over a repo of raw-YAML apps, written from the
README's rules alone (it imports nothing of gitgate): which bundles a commit has, which of
them a freeze holds as the commit names them and as they are live, which objects no pass may
write, and what the cluster holds once nothing is frozen.

The repo: apps, each a folder of ConfigMaps with an optional bundle.yaml (a name, a `team`
label); a `PAUSE` file in a folder; gates holding or suspending bundles by name or by label,
some until a time; a parent kustomization (`apps/kustomization.yaml`) that takes in every app
folder below `apps/`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime


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


@dataclass
class Record:
    identity: Identity
    objects: set[str]


@dataclass(frozen=True)
class GateSpec:
    """A gate file: it selects a bundle `name`, or the bundles labelled `team`."""

    by: str  # "name" or "team"
    value: str
    action: str = "hold"  # or "suspend" (every cluster)
    until: datetime | None = None

    def active(self, now: datetime) -> bool:
        return self.until is None or now < self.until

    def selects(self, identity: Identity) -> bool:
        return identity.name == self.value if self.by == "name" else identity.team == self.value


@dataclass
class Repo:
    """What a commit holds, as the model reads it."""

    apps: dict[int, App] = field(default_factory=dict)
    pauses: set[str] = field(default_factory=set)  # folders with a PAUSE file
    gates: dict[str, GateSpec] = field(default_factory=dict)  # by file name
    swallowed: bool = False  # apps/kustomization.yaml takes in the folders below apps/
    now: datetime = datetime(2026, 11, 18, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Bundle:
    identity: Identity
    objects: dict[str, str]


def bundle_name(folder: str) -> str:
    return folder.replace("/", "-")


def bundles_of(repo: Repo) -> list[Bundle]:
    """The commit's bundles: each app folder, or `apps` for every app folder below `apps/`
    while the parent kustomization takes them in."""
    out: list[Bundle] = []
    parent: dict[str, str] = {}
    for app in sorted(repo.apps.values(), key=lambda a: a.folder):
        if not app.present:
            continue
        if repo.swallowed and app.folder.startswith("apps/"):
            parent.update(app.objects)
            continue
        out.append(Bundle(Identity(app.name or bundle_name(app.folder), app.team, app.folder),
                          dict(app.objects)))
    if parent:
        out.append(Bundle(Identity("apps", None, "apps"), parent))
    return out


def covered(identity: Identity, repo: Repo, action: str | None = None) -> bool:
    """Whether a freeze covers `identity` (with `action`: a gate of that action, or for
    "hold" a `PAUSE` file too)."""
    if identity.folder in repo.pauses and action in (None, "hold"):
        return True
    return any(g.active(repo.now) and g.selects(identity) and action in (None, g.action)
               for g in repo.gates.values())


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


class Model:
    """The records the model keeps: per bundle name, the identity it was last open under and
    the objects it has live; and what is live."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.live: dict[str, str] = {}  # the templates on the control plane
        self.member: dict[str, str] = {}  # what the member cluster runs (no suspension there)

    def judge(self, repo: Repo) -> Judgement:
        bundles = bundles_of(repo)
        names = {b.identity.name for b in bundles}
        frozen_records = {name for name, record in self.records.items()
                          if covered(record.identity, repo)}

        def holding(identity: Identity) -> bool:
            record = self.records.get(identity.name)
            return covered(identity, repo, "hold") or (
                record is not None and covered(record.identity, repo, "hold"))

        def suspending(identity: Identity) -> bool:
            record = self.records.get(identity.name)
            return covered(identity, repo, "suspend") or (
                record is not None and covered(record.identity, repo, "suspend"))

        held_now = {b.identity.name for b in bundles if holding(b.identity)}
        suspended_now = {b.identity.name for b in bundles
                         if b.identity.name not in held_now and suspending(b.identity)}
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
        claimed_blocked = {o for b in blocked for o in b.objects}
        gone = [name for name, record in self.records.items()
                if name not in names and name not in frozen_records
                and not any(frozen.get(o, set()) - {name} for o in record.objects)
                and not record.objects & claimed_blocked]
        # a suspended bundle writes its own templates (the suspension in its policy first)
        own = {o for b in open_ for o in (set(b.objects) | (
            self.records[b.identity.name].objects if b.identity.name in self.records else set()))
            if frozen.get(o) == {b.identity.name}}
        suspended = {b.identity.name for b in open_} & suspended_now
        # suspended through the identity it is live under alone: its record keeps it
        by_record = {b.identity.name for b in open_ if b.identity.name in suspended
                     and b.identity.name in self.records and any(
                         g.active(repo.now) and g.selects(self.records[b.identity.name].identity)
                         and not g.selects(b.identity) for g in repo.gates.values())}
        return Judgement(open_, suspended, blocked, set(frozen) - own, gone,
                         {o for b in bundles for o in b.objects}, by_record)

    def after_pass(self, judgement: Judgement) -> None:
        """The records and live objects once a pass did what the model allows."""
        for b in judgement.open:
            for record in self.records.values():
                record.objects -= set(b.objects)
        for name in judgement.gone:
            for obj in self.records.pop(name).objects - judgement.claimed:
                self.live.pop(obj, None)
                self.member.pop(obj, None)
        for b in judgement.open:
            name = b.identity.name
            previous = self.records.get(name)
            suspended = name in judgement.suspended
            identity = (previous.identity if previous is not None and name in judgement.by_record
                        else b.identity)
            objects = set(b.objects)
            if previous is not None:
                if suspended:  # a suspended bundle deletes no template until it lifts, and
                    objects |= previous.objects  # keeps what no open bundle took over
                else:
                    for obj in previous.objects - judgement.claimed:
                        self.live.pop(obj, None)
                        self.member.pop(obj, None)
            self.records[name] = Record(identity, objects)
            self.live.update(b.objects)
            if not suspended:
                self.member.update(b.objects)
        for name in [n for n, r in self.records.items() if not r.objects]:
            del self.records[name]
