"""Prometheus metrics of the reconcile loop (prometheus_client, one registry per loop)."""

from __future__ import annotations

import platform
import threading
from collections.abc import Iterator, Mapping

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gitgate import __version__
from gitgate.karmada.dispatch import Dispatch, Health, Version
from gitgate.model import Verdict

# the verdicts a bundle's gauge takes (a removed bundle's series are dropped instead)
VERDICTS = tuple(str(v) for v in (Verdict.APPLY, Verdict.HELD, Verdict.SUSPENDED,
                                  Verdict.HALTED, Verdict.FAILED))


class LoopMetrics:
    """The loop's series, plus the client's process, platform and GC collectors; counters carry
    no `_created` series (they double the series count and no dashboard reads them)."""

    def __init__(self, *, tool_versions: dict[str, str] | None = None) -> None:
        disable_created_metrics()
        self.registry = CollectorRegistry()
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            self.registry.register(collector)
        versions = {"version": __version__, "python": platform.python_version(),
                    "helm": "", "kustomize": "", **(tool_versions or {})}
        self.build = Gauge("gitgate_build_info", "1, labelled with gitgate's and its tools' "
                           "versions", list(versions), registry=self.registry)
        self.build.labels(**versions).set(1)
        self.gate_active = Gauge("gitgate_gate_active", "1 while the gate holds or suspends "
                                 "what it covers", ["gate"], registry=self.registry)
        self.fetches = Counter("gitgate_git_fetch", "fetches of the Git source by result",
                               ["result"], registry=self.registry)
        self.last_fetch = Gauge("gitgate_git_last_fetch_timestamp_seconds",
                                "when the last successful fetch ended", registry=self.registry)
        self.last_fetch_ok = Gauge("gitgate_git_last_fetch_success",
                                   "1 when the last fetch worked", registry=self.registry)
        self.gates_trusted = Gauge("gitgate_gates_trusted",
                                   "with --gate-signers: 1 when every freeze file is as the head "
                                   "has it, 0 while some are put back (a change lacked a gate "
                                   "signer's signature)", registry=self.registry)
        self.head_verified = Gauge("gitgate_git_head_verified",
                                   "with --verify-commits: 1 when the branch's head is signed by "
                                   "an allowed key, 0 while an earlier commit stays in force",
                                   registry=self.registry)
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
        self.shard_acting = Gauge("gitgate_shard_acting", "with --shard: 1 while this replica "
                                  "acts on an assignment every live replica acknowledged",
                                  registry=self.registry)
        self.shard_bundles = Gauge("gitgate_shard_bundles", "with --shard: the bundles of "
                                   "this replica's shard at its last pass",
                                   registry=self.registry)
        self.shard_replicas = Gauge("gitgate_shard_replicas", "with --shard: the replicas in "
                                    "the assignment this replica last read",
                                    registry=self.registry)
        self.gate_until = Gauge("gitgate_gate_until_timestamp_seconds",
                                "when the gate lifts by itself (gates with `until`)", ["gate"],
                                registry=self.registry)
        self.interval = Gauge("gitgate_interval_seconds", "how often the loop fetches "
                              "(--interval)", registry=self.registry)
        self.head_unapplied = Gauge("gitgate_head_unapplied_since_timestamp_seconds",
                                    "since when the branch's head has not been reconciled "
                                    "without failure (0 while it is)", registry=self.registry)
        self.api_requests = Counter("gitgate_api_requests", "requests to the Karmada API "
                                    "server by verb and status code (0: no answer)",
                                    ["verb", "code"], registry=self.registry)
        self.api_request_duration = Histogram(
            "gitgate_api_request_duration_seconds", "seconds from sending a request to the "
            "Karmada API server to its answer, retries included, by verb and resource",
            ["verb", "resource"], registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
        self.karmada_read = Histogram(
            "gitgate_karmada_read_duration_seconds", "seconds a read of what Karmada did with "
            "this replica's bundles took (after each pass, and every --status-interval)",
            registry=self.registry, buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
        self.karmada_reading = Gauge("gitgate_karmada_reading", "1 while this replica reads "
                                     "what Karmada did with its bundles", registry=self.registry)
        self.bundles = BundleSeries()  # exposed beside the registry, its text kept

    def api_request(self, verb: str, resource: str, code: int, seconds: float) -> None:
        """A request answered (`apiserver.transport.RequestObserver`)."""
        self.api_requests.labels(verb, str(code)).inc()
        self.api_request_duration.labels(verb, resource).observe(seconds)

    def record_verdicts(self, verdicts: dict[str, str]) -> None:
        self.bundles.set_verdicts(verdicts)

    def record_gates(self, active: dict[str, bool],
                     until: Mapping[str, float] | None = None) -> None:
        """Each gate's state, and when those with `until` lift (seconds since the epoch)."""
        self.gate_active.clear()
        self.gate_until.clear()
        for gate, on in active.items():
            self.gate_active.labels(gate).set(1 if on else 0)
        for gate, when in (until or {}).items():
            self.gate_until.labels(gate).set(when)

    def record_failures(self, failed: set[str], present: set[str]) -> None:
        """Count, per bundle, the passes in a row that failed it."""
        self.bundles.count_failures(failed, present)

    def record_applied(self, bundles: list[str], when: float) -> None:
        self.bundles.set_applied(bundles, when)

    def forget_bundles(self, present: set[str]) -> None:
        self.bundles.forget_applied(present)

    def record_dispatch(self, bundles: Mapping[str, Dispatch]) -> None:
        """Per bundle and member cluster: health (a state set), behind, suspended."""
        self.bundles.set_dispatch(bundles)

    def record_fetch(self, ok: bool, when: float) -> None:
        self.fetches.labels("success" if ok else "failure").inc()
        self.last_fetch_ok.set(1 if ok else 0)
        if ok:
            self.last_fetch.set(when)

    def record_revision(self, revision: str) -> None:
        self.revision.clear()
        self.revision.labels(revision).set(1)

    def families(self) -> Iterator[Metric]:
        """Every family the loop exposes: the registry's and the per-bundle ones."""
        yield from self.registry.collect()
        yield from self.bundles.collect()

    def exposition(self) -> bytes:
        return generate_latest(self.registry) + self.bundles.exposition()


class BundleSeries(Collector):
    """The per-bundle series, worked out when Prometheus scrapes them from what the last
    pass and the last read of Karmada said (a custom collector, as prometheus_client
    offers for data kept elsewhere). A child gauge per series held about 1 kB: at 5,000
    bundles, seven series each (a verdict state set, failed passes, last applied) held
    35,000 of them, and a member cluster adds five more per bundle.

    Their text is kept until a pass or a read of Karmada changes them: formatting 5,000
    bundles' series took a third of a replica's CPU when scraped once a second (bench/results/
    history.md, 5,000 bundles on the harness), and a scrape between two passes finds nothing new."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = 0  # counts the changes of what the series say
        self._text: tuple[int, bytes] | None = None  # the exposition of one version
        self._own = CollectorRegistry(auto_describe=False)  # this collector alone
        self._own.register(self)
        self._verdicts: dict[str, str] = {}
        self._failing: dict[str, int] = {}  # the bundles the last pass failed: passes in a row
        self._present: frozenset[str] = frozenset()  # shown: 0 unless failing
        self._applied: dict[str, float] = {}
        self._dispatch: dict[str, Dispatch] = {}

    def set_verdicts(self, verdicts: Mapping[str, str]) -> None:
        with self._lock:
            self._verdicts = dict(verdicts)
            self._version += 1

    def count_failures(self, failed: set[str], present: set[str]) -> None:
        with self._lock:
            self._failing = {b: self._failing.get(b, 0) + 1 for b in failed}
            self._present = frozenset(present)
            self._version += 1

    def set_applied(self, bundles: list[str], when: float) -> None:
        with self._lock:
            self._applied.update(dict.fromkeys(bundles, when))
            self._version += 1

    def forget_applied(self, present: set[str]) -> None:
        with self._lock:
            self._applied = {b: at for b, at in self._applied.items() if b in present}
            self._version += 1

    def set_dispatch(self, bundles: Mapping[str, Dispatch]) -> None:
        with self._lock:
            self._dispatch = dict(bundles)
            self._version += 1

    def exposition(self) -> bytes:
        """The series in Prometheus's text format, formatted again only after a change (a
        change during the formatting leaves the text under the older version, so the next
        scrape formats it again)."""
        with self._lock:
            version, kept = self._version, self._text
        if kept is not None and kept[0] == version:
            return kept[1]
        text = generate_latest(self._own)
        with self._lock:
            self._text = (version, text)
        return text

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            verdicts, failing, present = self._verdicts, self._failing, self._present
            applied, dispatch = self._applied, self._dispatch
        applied_at = GaugeMetricFamily(
            "gitgate_bundle_last_applied_timestamp_seconds",
            "when a pass last applied the bundle without failure", labels=["bundle"])
        for bundle, at in applied.items():
            applied_at.add_metric([bundle], at)
        verdict = GaugeMetricFamily("gitgate_bundle_verdict",
                                    "1 for the bundle's current verdict",
                                    labels=["bundle", "verdict"])
        for bundle, current in verdicts.items():
            for state in VERDICTS:
                verdict.add_metric([bundle, state], 1 if state == current else 0)
        failed = GaugeMetricFamily("gitgate_bundle_failed_passes",
                                   "passes in a row in which the bundle failed (0 once one "
                                   "does not)", labels=["bundle"])
        for bundle in sorted(present):
            failed.add_metric([bundle], failing.get(bundle, 0))
        yield from (applied_at, verdict, failed, *_dispatch_families(dispatch))


def _dispatch_families(bundles: Mapping[str, Dispatch]) -> tuple[Metric, ...]:
    health = GaugeMetricFamily("gitgate_bundle_cluster_health",
                               "1 for the bundle's health on the member cluster as Karmada "
                               "reports it (worst over its objects)",
                               labels=["bundle", "cluster", "health"])
    behind = GaugeMetricFamily("gitgate_bundle_cluster_behind",
                               "1 while the member cluster runs an older template of the "
                               "bundle", labels=["bundle", "cluster"])
    suspended = GaugeMetricFamily("gitgate_bundle_cluster_suspended",
                                  "1 while dispatch of the bundle to the member cluster is "
                                  "suspended", labels=["bundle", "cluster"])
    for bundle, dispatch in bundles.items():
        for state in dispatch.clusters:
            for each in Health:
                health.add_metric([bundle, state.name, str(each)],
                                  1 if each is state.health else 0)
            behind.add_metric([bundle, state.name], 1 if state.version is Version.BEHIND else 0)
            suspended.add_metric([bundle, state.name], 1 if state.suspended else 0)
    return health, behind, suspended
