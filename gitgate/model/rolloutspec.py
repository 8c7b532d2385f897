"""A bundle's progressive rollout across member clusters, as `bundle.yaml` (or the
`gitgate.yaml` defaults) declares it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from gitgate.model.analysisspec import Check

ON_FAILURE = ("hold", "continue", "rollback")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Requirement:
    """One `matchExpressions` item of a label selector."""

    key: str
    operator: str  # one of OPERATORS
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        found = self.key in labels and labels[self.key] in self.values
        return found if self.operator == "In" else not found

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out


@dataclass(frozen=True)
class ClusterSelector:
    """A Kubernetes label selector over Karmada's Cluster objects (every part must match)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return (all(labels.get(k) == v for k, v in self.match_labels)
                and all(r.matches(labels) for r in self.match_expressions))

    def text(self) -> str:
        parts = [f"{k}={v}" for k, v in self.match_labels]
        for r in self.match_expressions:
            if r.operator in ("In", "NotIn"):
                parts.append(f"{r.key} {r.operator.lower()} ({','.join(r.values)})")
            else:
                parts.append(r.key if r.operator == "Exists" else f"!{r.key}")
        return ",".join(parts)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [r.as_dict() for r in self.match_expressions]
        return out


@dataclass(frozen=True)
class Members:
    """Karmada's member clusters (name -> labels), or why they could not be read."""

    labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True)
class Wave:
    """Member clusters released together: named, or chosen by their labels."""

    clusters: tuple[str, ...] = ()
    selector: ClusterSelector | None = None

    def text(self) -> str:
        names = ", ".join(self.clusters)
        if self.selector is None:
            return names
        return f"{self.selector.text()}: {names or 'no cluster'}"

    def as_dict(self) -> dict[str, Any]:
        if self.selector is None:
            return {"clusters": list(self.clusters)}
        return {"labelSelector": self.selector.as_dict()}


@dataclass(frozen=True)
class RolloutSpec:
    waves: tuple[Wave, ...]  # in order
    bake: timedelta = timedelta(minutes=5)
    progress_deadline: timedelta = timedelta(minutes=10)
    on_failure: str = "hold"  # or "continue", or "rollback" (halts, and the loop rolls back)
    analysis: tuple[Check, ...] = ()  # must hold on every released cluster while it bakes

    @property
    def selects(self) -> bool:
        """Some wave chooses its clusters by label (they must be looked up in Karmada)."""
        return any(w.selector is not None for w in self.waves)

    def resolved(self, members: Mapping[str, Mapping[str, str]]) -> RolloutSpec:
        """Each selector wave filled with the member clusters (name -> labels) it matches:
        a cluster named by any wave stays in that wave, and one matched by several selectors
        goes to the first (as in Argo CD's RollingSync steps)."""
        taken = {c for w in self.waves if w.selector is None for c in w.clusters}
        waves = []
        for wave in self.waves:
            if wave.selector is not None:
                chosen = tuple(name for name in sorted(members)
                               if name not in taken and wave.selector.matches(members[name]))
                taken |= set(chosen)
                wave = replace(wave, clusters=chosen)
            waves.append(wave)
        return replace(self, waves=tuple(waves))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"waves": [w.as_dict() for w in self.waves],
                               "bake": seconds_text(self.bake),
                               "progressDeadline": seconds_text(self.progress_deadline),
                               "onFailure": self.on_failure}
        if self.analysis:
            out["analysis"] = [c.as_dict() for c in self.analysis]
        return out


def named_waves(*waves: tuple[str, ...]) -> tuple[Wave, ...]:
    return tuple(Wave(tuple(w)) for w in waves)


def seconds_text(value: timedelta) -> str:
    return f"{int(value.total_seconds())}s"
