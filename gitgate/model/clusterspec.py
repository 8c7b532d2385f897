"""Per-cluster customization of a bundle (`clusters:` in bundle.yaml), and what it compiles
to: per object, the JSON-patch operations Karmada applies for each set of clusters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitgate.model.objects import Manifest, ObjectRef
from gitgate.model.rolloutspec import ClusterSelector


@dataclass(frozen=True)
class Customization:
    """For the member clusters named (or selected by their labels): Helm values merged over
    the bundle's, and patches (kustomize's `patches` entries: JSON 6902 or strategic merge)
    applied to what the bundle renders."""

    clusters: tuple[str, ...] = ()
    selector: ClusterSelector | None = None
    values: Manifest = field(default_factory=dict)
    patches: tuple[Manifest, ...] = ()
    line: int | None = field(default=None, compare=False)  # of the entry in bundle.yaml

    def target_cluster(self) -> Manifest:
        """Karmada's `targetCluster` for these clusters."""
        if self.selector is not None:
            return {"labelSelector": self.selector.as_dict()}
        return {"clusterNames": list(self.clusters)}

    def describe(self) -> str:
        return (f"clusters {', '.join(self.clusters)}" if self.selector is None
                else f"clusters labelled {self.selector.text()}")

    def applies_to(self, cluster: str, labels: dict[str, str] | None) -> bool | None:
        """Whether it customizes `cluster`; None when that takes the cluster's labels and
        they are not known."""
        if self.selector is None:
            return cluster in self.clusters
        return None if labels is None else self.selector.matches(labels)


@dataclass(frozen=True)
class OverrideRule:
    target_cluster: Manifest
    operations: tuple[Manifest, ...]  # {path, operator: add|replace|remove, value?}
    customization: int  # which `clusters:` entry (from 1) it comes from


@dataclass(frozen=True)
class ObjectOverride:
    """What the customizations change in one object, per set of clusters."""

    ref: ObjectRef
    api_version: str
    rules: tuple[OverrideRule, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"object": str(self.ref), "rules": [
            {"customization": r.customization, "targetCluster": r.target_cluster,
             "operations": list(r.operations)} for r in self.rules]}
