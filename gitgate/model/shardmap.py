"""Which replica of `gitgate run --shard` reconciles which bundle: rendezvous (highest random
weight) hashing of the name of the bundle's source over the replicas the assignment lists.
Every replica computes the same owner from the same list with no table to share; when a replica
leaves, only its own bundles move (each to the replica that scores next highest for it), and
when one joins, only the bundles it now scores highest for move to it (about 1/n of them)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def _score(member: str, key: str) -> int:
    digest = hashlib.blake2b(f"{member}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def unit_of(bundle: str) -> str:
    """What is assigned as one: a source. The bundles of one source (`base`, and `base/<app>`
    with `split: app`; a source's own name never holds a '/') share a replica, which renders
    the source once; elsewhere it is only summarized (`bundle.summary`)."""
    return bundle.partition("/")[0]


def owner(key: str, members: tuple[str, ...]) -> str | None:
    """The member that scores highest for `key`'s unit (None: no member)."""
    unit = unit_of(key)
    return max(members, key=lambda m: (_score(m, unit), m)) if members else None


@dataclass(frozen=True)
class ShardMap:
    """An assignment the replicas agree on: its members, sorted, and a digest naming it (what
    a replica acknowledges)."""

    members: tuple[str, ...]

    @classmethod
    def of(cls, members: set[str] | list[str] | tuple[str, ...]) -> ShardMap:
        return cls(tuple(sorted(set(members))))

    @property
    def digest(self) -> str:
        return hashlib.sha256("\n".join(self.members).encode()).hexdigest()[:16]

    def owner(self, bundle: str) -> str | None:
        return owner(bundle, self.members)

    def owns(self, member: str, bundle: str) -> bool:
        return self.owner(bundle) == member

    def as_dict(self) -> dict[str, object]:
        return {"members": list(self.members), "digest": self.digest}

    @classmethod
    def from_dict(cls, data: object) -> ShardMap | None:
        """A recorded assignment back (None when it is not one: the replicas agree anew)."""
        if not isinstance(data, dict):
            return None
        members = data.get("members")
        if not isinstance(members, list) or not all(isinstance(m, str) and m for m in members):
            return None
        made = cls.of(members)
        return made if data.get("digest") == made.digest else None
