"""An instance belongs to one repo: the records of a gitgate instance name the repo and
folder they were applied from (`Inventory.origin`), and a pass of another repo refuses before
any write, naming the owner, unless it adopts the instance. A record without an origin (an
earlier release wrote it) is nobody's: the first repo that applies it takes it. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from gitgate.apply.inventory import Inventory
from gitgate.errors import OtherRepo
from gitgate.model.ownership import Origin

SHOWN = 3  # bundles named per owner


def other_owners(inventories: Mapping[str, Inventory], origin: Origin) -> dict[Origin, list[str]]:
    """The origins other than `origin` that records name, each with its bundles."""
    others: dict[Origin, list[str]] = {}
    for name, inventory in sorted(inventories.items()):
        if inventory.origin.known and inventory.origin != origin:
            others.setdefault(inventory.origin, []).append(name)
    return others


def refuse_other_repo(inventories: Mapping[str, Inventory], origin: Origin, instance: str,
                      adopt: bool) -> None:
    """Raises OtherRepo when a record of `instance` names a repo or folder other than
    `origin` (unknown: nothing is checked), unless the pass adopts the instance."""
    if adopt or not origin.known:
        return
    others = other_owners(inventories, origin)
    if not others:
        return
    owners = " and to ".join(
        f"{owner}, whose bundles it holds ({', '.join(names[:SHOWN])}"
        f"{f' and {len(names) - SHOWN} more' if len(names) > SHOWN else ''})"
        for owner, names in others.items())
    raise OtherRepo(
        f"the instance {instance!r} on this API server belongs to {owners}; this folder is "
        f"{origin}. Applying it there would replace or prune those bundles, so nothing was "
        "written. Give this folder its own instance (--instance NAME), or take the instance "
        "over with --adopt (the bundles this folder lacks are then pruned, under the "
        "mass-prune brake)")
