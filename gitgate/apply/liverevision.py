"""Which revision is live: in Karmada's templates, and on each member cluster. Pure.

A pass that writes a bundle's templates makes its revision the applied one. A member cluster
whose dispatch is suspended keeps what it ran until the suspension lifts, so when the content
changes under a suspension, that cluster is recorded as still running the revision it had.
A held or failed pass writes nothing and changes nothing here."""

from __future__ import annotations

from dataclasses import dataclass

ALL = "*"  # every member cluster


@dataclass(frozen=True)
class Live:
    revision: str = ""  # the revision last written to Karmada ("" for never)
    digest: str = ""  # the bundle's content digest at that revision
    behind: tuple[tuple[str, str], ...] = ()  # (cluster or "*", the revision it still runs)


def after_write(previous: Live, revision: str, digest: str,
                suspended: tuple[str, ...] | None) -> Live:
    """What is live once a pass wrote `digest` at `revision` with dispatch suspended to
    `suspended` ("*": every cluster; None: none)."""
    held = set(suspended or ())
    was = dict(previous.behind)
    changed = digest != previous.digest
    behind: dict[str, str] = {}
    for cluster in held | set(was):
        if cluster not in held and ALL not in held:
            continue  # dispatch to it is open again: it gets the current templates
        if cluster in was:
            behind[cluster] = was[cluster]
        elif ALL in was and cluster != ALL:
            behind[cluster] = was[ALL]
        elif changed:
            behind[cluster] = previous.revision  # what it ran before this change
    return Live(revision, digest, tuple(sorted(behind.items())))
