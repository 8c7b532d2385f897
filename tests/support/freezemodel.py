"""A reference model of gitgate's promise over a repo of raw-YAML apps, written from the
README's rules alone (it imports nothing of gitgate): which bundles a commit has, which of
them a freeze holds as the commit names them and as they are live, which objects no pass may
write, and what the cluster holds once nothing is frozen.

The repo: apps, each a folder of ConfigMaps with an optional bundle.yaml (a name, a `team`
label); a `PAUSE` file in a folder; gates holding a bundle by name or by label; a parent
kustomization (`apps/kustomization.yaml`) that takes in every app folder below `apps/`."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass
class Repo:
    """What a commit holds, as the model reads it."""

    apps: dict[int, App] = field(default_factory=dict)
    pauses: set[str] = field(default_factory=set)  # folders with a PAUSE file
    name_gates: set[str] = field(default_factory=set)  # bundle names held by a gate
    team_gates: set[str] = field(default_factory=set)  # `team` labels held by a gate
    swallowed: bool = False  # apps/kustomization.yaml takes in the folders below apps/


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


def covered(identity: Identity, repo: Repo) -> bool:
    return (identity.folder in repo.pauses or identity.name in repo.name_gates
            or (identity.team is not None and identity.team in repo.team_gates))


@dataclass
class Judgement:
    """What one pass over a commit may do, by the model."""

    open: list[Bundle]  # bundles whose objects are written
    blocked: list[Bundle]  # held or refused: nothing of them is written
    frozen: set[str]  # objects no write or delete may touch
    gone: list[str]  # records whose bundle left Git and nothing keeps


class Model:
    """The records the model keeps: per bundle name, the identity it was last open under and
    the objects it has live; and what is live."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.live: dict[str, str] = {}

    def judge(self, repo: Repo) -> Judgement:
        bundles = bundles_of(repo)
        names = {b.identity.name for b in bundles}
        frozen_records = {name for name, record in self.records.items()
                          if covered(record.identity, repo)}
        held_now = {b.identity.name for b in bundles
                    if covered(b.identity, repo) or b.identity.name in frozen_records}
        frozen: dict[str, str] = {}
        for name in frozen_records:
            for obj in self.records[name].objects:
                frozen.setdefault(obj, name)
        for b in bundles:
            if b.identity.name in held_now:
                for obj in b.objects:
                    frozen.setdefault(obj, b.identity.name)
                if b.identity.name in self.records:
                    for obj in self.records[b.identity.name].objects:
                        frozen.setdefault(obj, b.identity.name)
        open_, blocked = [], []
        for b in bundles:
            name = b.identity.name
            record = self.records.get(name)
            leftovers = (record.objects - set(b.objects)) if record else set()
            touched = set(b.objects) | leftovers
            if name in held_now or any(frozen.get(o, name) != name for o in touched):
                blocked.append(b)
            else:
                open_.append(b)
        claimed_blocked = {o for b in blocked for o in b.objects}
        gone = [name for name, record in self.records.items()
                if name not in names and name not in frozen_records
                and not any(frozen.get(o, name) != name for o in record.objects)
                and not record.objects & claimed_blocked]
        return Judgement(open_, blocked, set(frozen), gone)

    def after_pass(self, judgement: Judgement) -> None:
        """The records and live objects once a pass did what the model allows."""
        for b in judgement.open:
            for record in self.records.values():
                record.objects -= set(b.objects)
        for name in judgement.gone:
            for obj in self.records.pop(name).objects:
                if not any(obj in b.objects for b in judgement.open):
                    self.live.pop(obj, None)
        for b in judgement.open:
            name = b.identity.name
            previous = self.records.get(name)
            if previous is not None:
                for obj in previous.objects - set(b.objects):
                    self.live.pop(obj, None)
            self.records[name] = Record(b.identity, set(b.objects))
            self.live.update(b.objects)
        for name in [n for n, r in self.records.items() if not r.objects]:
            del self.records[name]
