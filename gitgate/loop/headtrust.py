"""What the loop says of the head it follows: with `--verify-commits`, whether an allowed
key signed it; with `--gate-signers`, which freeze files were put back; since when the head
is not reconciled; and the trust anchors, recorded on the API server and handed back to the
source once per term as leader."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import Any

from gitgate.apiserver.ports import ClusterPort
from gitgate.errors import GitgateError, SourceError
from gitgate.loop.reporting import PassReporter
from gitgate.loop.schedule import LoopState
from gitgate.loop.shardturn import ShardTurn
from gitgate.passes.recorded import provenance_document, read_document
from gitgate.source.anchors import TrustAnchors
from gitgate.source.git import GitSource
from gitgate.source.localgit import LocalCheckout
from gitgate.status.notify import unsigned_message

log = logging.getLogger("gitgate")


class HeadTrust:
    def __init__(self, source: GitSource | LocalCheckout, cluster: ClusterPort, instance: str,
                 state: LoopState, reporter: PassReporter, turns: ShardTurn):
        self.source, self.cluster, self.instance, self.state = source, cluster, instance, state
        self.reporter, self.turns = reporter, turns
        self.anchored = False  # the recorded trust anchors were handed to the source
        self._unapplied: tuple[str, datetime] | None = None  # the head not reconciled, since

    def note_head(self, in_force: str, now: datetime) -> None:
        """Since when the branch's head is not reconciled without failure (an unverified
        head counts: the revision in force is another), for the alert on a head that does
        not go out."""
        signature, gates = self.state.signature, self.state.gate_report
        head = signature.commit if signature is not None else in_force
        if gates is not None and gates.head_refused:
            head = gates.head
        result = self.state.last_result
        applied = (head == in_force == self.state.revision and self.state.failure is None
                   and result is not None and result.ok)
        metrics = self.reporter.metrics
        if applied:
            self._unapplied = None
            metrics.head_unapplied.set(0)
            return
        if self._unapplied is None or self._unapplied[0] != head:
            self._unapplied = (head, now)
        metrics.head_unapplied.set(self._unapplied[1].timestamp())

    def note_signature(self, in_force: str | None) -> None:
        """With --verify-commits: say once per commit when the branch's head is not signed by
        an allowed key and which earlier commit stays in force (`in_force`; None: none)."""
        signature = getattr(self.source, "signature", None)
        previous = self.state.signature
        if in_force is not None:  # a fetch that worked says whether it is checked at all
            self.state.signature = signature
        if signature is None:
            return
        self.reporter.metrics.head_verified.set(1 if signature.trusted else 0)
        if signature.trusted or (previous is not None and previous == signature):
            return
        kept = f"{in_force[:12]} stays in force" if in_force else "nothing is applied"
        notifier = self.reporter.notifier
        if notifier is not None and self.turns.owns("gitgate.provenance"):
            notifier.offer([unsigned_message(signature.said(), signature.commit, in_force)])
        log.warning("not applied: %s; %s", signature.said(), kept,
                    extra={"event": "unverified", "commit": signature.commit,
                           "key": signature.key or None, "inForce": in_force})

    def note_gates(self) -> None:
        """With --gate-signers: say once per head which freeze files were put back because a
        commit without a gate signer's signature changed them."""
        report = getattr(self.source, "gate_report", None)
        previous = self.state.gate_report
        self.state.gate_report = report
        if report is None:
            return
        self.reporter.metrics.gates_trusted.set(0 if report.refused else 1)
        if report.refused and (previous is None or previous.head != report.head
                               or previous.refused != report.refused):
            log.warning("%s", report.said(), extra={
                "event": "untrusted-gates", "commit": report.head,
                "refused": [r.commit for r in report.refused]})

    def restore_anchors(self) -> None:
        """Once per term as leader, before a head is judged: hand the source the trust anchors
        recorded on the API server, so that a restart (or a new replica) judges against the
        revisions the loop last trusted, not against the first head it sees. Raises
        GitgateError while the record cannot be read (nothing is judged meanwhile)."""
        source = self.source
        if self.anchored or not isinstance(source, GitSource) or not source.judges:
            return
        try:
            recorded = read_document(self.cluster, self.instance, "provenance", strict=True)
        except ValueError:
            raise SourceError("the gitgate.provenance record is not JSON: nothing is judged "
                              "until it is repaired or deleted") from None
        except GitgateError as exc:
            raise SourceError(f"cannot read the trust anchors recorded in gitgate.provenance: "
                              f"{exc.message}") from None
        anchors = TrustAnchors.from_dict((recorded or {}).get("anchors"))
        if anchors is not None and anchors.source != source.anchor_source:
            log.warning("the trust anchors recorded are of %s, not %s: this loop starts from "
                        "the branch's head", anchors.source, source.anchor_source,
                        extra={"event": "anchors-not-restored"})
            anchors = None
        source.restore(anchors)
        self.anchored = True

    def provenance(self, in_force: str) -> dict[str, Any]:
        """What `status` shows of signatures and freeze files, with the trust anchors they
        were judged against (`restore_anchors` reads them back)."""
        doc = provenance_document(self.state.signature, self.state.gate_report, in_force)
        anchors = getattr(self.source, "anchors", None)
        if doc and isinstance(anchors, TrustAnchors):
            doc["anchors"] = replace(
                anchors, verified=anchors.verified if self.state.signature else "",
                gates=anchors.gates if self.state.gate_report else "").as_dict()
        return doc
