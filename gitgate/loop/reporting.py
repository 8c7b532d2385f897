"""The loop's reporting: a pass's result turned into metrics, notifications and the log
line of the pass, and a failure into its metric and log line. It decides nothing the loop
does next."""

from __future__ import annotations

import logging
from datetime import datetime

from gitgate.apply.work import PassResult
from gitgate.errors import Reason
from gitgate.model import Verdict
from gitgate.plan import Plan
from gitgate.status.metrics import LoopMetrics
from gitgate.status.notify import Notifier, expiring_messages, pass_messages

log = logging.getLogger("gitgate")


class PassReporter:
    def __init__(self, metrics: LoopMetrics, notifier: Notifier | None = None):
        self.metrics = metrics
        self.notifier = notifier  # --notify-urls-file: people told of transitions

    def passed(self, plan: Plan, result: PassResult, revision: str, reason: str,
               now: datetime, duration: float, *, tells_gates: bool) -> None:
        """A pass that ran: its series, the people told of what changed (and, with
        `tells_gates`, of freezes about to lift), and its log line."""
        self.metrics.pass_duration.observe(duration)
        verdicts = {b.bundle: (str(Verdict.FAILED) if b.failed else b.verdict)
                    for b in result.bundles if b.verdict != Verdict.REMOVED}
        self.metrics.record_verdicts(verdicts)
        self.metrics.record_gates({g.gate.name: g.active for g in plan.gates},
                                  {g.gate.name: g.gate.until.timestamp() for g in plan.gates
                                   if g.gate.until is not None})
        self.metrics.record_failures({b.bundle for b in result.bundles if b.failed},
                                     set(verdicts))
        if self.notifier is not None:
            self.notifier.offer([*pass_messages(result.transitions, revision),
                                 *(expiring_messages(plan.gates, now) if tells_gates else [])])
        self.metrics.record_applied([b.bundle for b in result.bundles
                                     if b.verdict == Verdict.APPLY and not b.failed],
                                    now.timestamp())
        self.metrics.forget_bundles(set(verdicts))
        self.metrics.record_revision(revision)
        self.metrics.applied.inc(sum(len(b.applied) for b in result.bundles))
        self.metrics.pruned.inc(sum(len(b.pruned) for b in result.bundles))
        for bundle in result.bundles:
            if bundle.failed:
                self.metrics.errors.labels(bundle.reason or Reason.FAILED).inc()
        counts = {v: sum(1 for x in verdicts.values() if x == v)
                  for v in (Verdict.APPLY, Verdict.HELD, Verdict.SUSPENDED, Verdict.HALTED,
                            Verdict.FAILED)}
        # a look at a waiting rollout or sync that changed nothing is said at debug level
        quiet = reason == "progress-check" and not result.transitions and not any(
            b.applied or b.pruned or b.failed for b in result.bundles)
        log.log(logging.DEBUG if quiet else logging.INFO,
                "pass revision=%s reason=%s applied=%d held=%d suspended=%d halted=%d "
                "failed=%d duration=%.2fs", revision[:12], reason, counts[Verdict.APPLY],
                counts[Verdict.HELD], counts[Verdict.SUSPENDED], counts[Verdict.HALTED],
                counts[Verdict.FAILED],
                duration,
                extra={"event": "pass", "revision": revision, "reason": reason,
                       "bundles": counts, "duration": duration})
        if result.ok:
            self.metrics.last_success.set(now.timestamp())
        elif result.prune_blocked:
            self.metrics.errors.labels(Reason.PRUNE_BLOCKED).inc()

    def waiting(self, result: PassResult) -> None:
        log.info("waiting for dependencies another pass writes: %s", ", ".join(
            b.bundle for b in result.bundles if b.failed), extra={"event": "waiting"})

    def failed(self, reason: Reason, message: str, again: datetime, *,
               count_metric: bool = True) -> None:
        """A failure: its metric, and the log line that says when it is tried again."""
        if count_metric:
            self.metrics.errors.labels(reason).inc()
        log.warning("%s: %s (tried again at %s)", reason, message, again.isoformat(),
                    extra={"event": "failure", "reason": reason})
