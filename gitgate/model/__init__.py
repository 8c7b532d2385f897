"""Value types every stage shares: plain, frozen, no I/O. Each lives in a small module of this
package; import them from here."""

from gitgate.model.appbundle import Bundle
from gitgate.model.gaterule import Action, Approval, Gate, GateText, InvalidGate, Unreadable, Window
from gitgate.model.labels import BUNDLE_LABEL, bundle_from_label, bundle_label_value
from gitgate.model.objects import (
    FIELD_MANAGER,
    BundleOptions,
    Hashed,
    Manifest,
    ObjectRef,
    Problem,
    RenderedSource,
    Source,
    SourceKind,
    content_hash,
)
from gitgate.model.paths import is_under, join, parent_dir
from gitgate.model.rolloutspec import RolloutSpec
from gitgate.model.verdict import BundleVerdict, HoldReason, ReasonKind, Verdict, described

__all__ = [
    "BUNDLE_LABEL", "FIELD_MANAGER", "Action", "Approval", "Bundle", "BundleOptions",
    "BundleVerdict", "Gate",
    "GateText", "Unreadable",
    "Hashed", "HoldReason", "InvalidGate", "Manifest", "ObjectRef", "Problem", "ReasonKind",
    "RenderedSource", "RolloutSpec", "Source", "SourceKind", "Verdict", "Window",
    "bundle_from_label", "bundle_label_value", "content_hash", "described", "is_under", "join",
    "parent_dir",
]
