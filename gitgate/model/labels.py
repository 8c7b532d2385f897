"""The bundle label: which bundle an object belongs to, in a form label values accept."""

from __future__ import annotations

import hashlib

BUNDLE_LABEL = "gitgate.io/bundle"


def bundle_label_value(bundle: str) -> str:
    """Label values cannot hold '/': `shop/carts` is written `shop_carts` (bundle names never
    hold '_'); names too long for a label value end in a short hash."""
    value = bundle.replace("/", "_")
    if len(value) > 63:
        digest = hashlib.sha256(bundle.encode()).hexdigest()[:8]
        value = value[:54].rstrip("-_.") + "-" + digest
    return value


def bundle_from_label(value: str) -> str:
    return value.replace("_", "/")


def stored_name(bundle: str) -> str:
    """The form a bundle's name takes in the names gitgate gives objects (inventories,
    policies: `shop/carts` -> `shop.carts`). Two bundles with the same stored name would
    write each other's state, so they count as one name."""
    return bundle.replace("/", ".")
