"""Prometheus metrics of the reconcile loop (prometheus_client, one registry per loop)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

VERDICTS = ("apply", "held", "suspended", "failed")


class LoopMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.verdict = Gauge("gitgate_bundle_verdict", "1 for the bundle's current verdict",
                             ["bundle", "verdict"], registry=self.registry)
        self.pass_duration = Histogram("gitgate_pass_duration_seconds", "duration of a pass",
                                       registry=self.registry,
                                       buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
        self.errors = Counter("gitgate_errors_total", "errors by reason", ["reason"],
                              registry=self.registry)
        self.last_success = Gauge("gitgate_last_success_timestamp_seconds",
                                  "end of the last pass without failure", registry=self.registry)
        self.revision = Gauge("gitgate_revision_info", "1 for the revision last reconciled",
                              ["revision"], registry=self.registry)
        self.applied = Counter("gitgate_objects_applied_total", "objects written",
                               registry=self.registry)
        self.pruned = Counter("gitgate_objects_pruned_total", "objects deleted",
                              registry=self.registry)
        self.leader = Gauge("gitgate_leader", "1 while this replica holds the lease",
                            registry=self.registry)
        self._bundles: set[str] = set()

    def record_verdicts(self, verdicts: dict[str, str]) -> None:
        for gone in self._bundles - set(verdicts):
            for verdict in VERDICTS:
                self.verdict.remove(gone, verdict)
        for bundle, current in verdicts.items():
            for verdict in VERDICTS:
                self.verdict.labels(bundle, verdict).set(1 if verdict == current else 0)
        self._bundles = set(verdicts)

    def record_revision(self, revision: str) -> None:
        self.revision.clear()
        self.revision.labels(revision).set(1)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
