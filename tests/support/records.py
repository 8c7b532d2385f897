"""A bundle's record as gitgate keeps it (its `Bundle` object in gitgate-system), read the way
a test reaches the API server: `reader.get(...)` or the emulator's own store."""

from __future__ import annotations

from gitgate.apply.inventory import DEFAULT_INSTANCE, NAMESPACE, Inventory
from gitgate.apply.recordformat import API_VERSION, KIND, bundle_name, from_bundle


def record(reader, bundle: str, instance: str = DEFAULT_INSTANCE) -> Inventory | None:
    """Through a cluster port (anything with `get`)."""
    found = reader.get(API_VERSION, KIND, NAMESPACE, bundle_name(bundle, instance))
    return from_bundle(found) if found else None


def stored_record(emulator, bundle: str, instance: str = DEFAULT_INSTANCE) -> Inventory | None:
    """From the emulator's store, without a request."""
    found = emulator.state.object("gitgate.io", "bundles", NAMESPACE,
                                  bundle_name(bundle, instance))
    return from_bundle(found) if found else None


def names(inventory: Inventory) -> set[str]:
    """The names of the objects it records."""
    return {e.name for e in inventory.entries}
