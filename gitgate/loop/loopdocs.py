"""The loop's documents on the API server beside the records: `gitgate.provenance` (what
`status` shows of signatures and freeze files) and `gitgate.overview` (the page's gates,
rollouts and last changes, for `gitgate ui`; with `--shard`, one part per replica), each
written when it changed, by the replica that owns it."""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from typing import Any

from gitgate.apiserver.ports import ClusterPort
from gitgate.errors import GitgateError
from gitgate.loop.schedule import LoopState
from gitgate.loop.shardturn import ShardTurn
from gitgate.passes.recorded import read_document, read_parts, record_document, record_part
from gitgate.plan import Plan
from gitgate.source.git import GitSource
from gitgate.source.localgit import LocalCheckout, content_commit
from gitgate.status.overview import overview_document

log = logging.getLogger("gitgate")


class LoopDocuments:
    def __init__(self, cluster: ClusterPort, instance: str, state: LoopState, turns: ShardTurn,
                 source: GitSource | LocalCheckout, path: str):
        self.cluster, self.instance, self.state, self.turns = cluster, instance, state, turns
        self.source, self.path = source, path
        # gitgate.provenance and gitgate.overview as last written (an empty provenance:
        # nothing to say, nothing written)
        self._recorded: dict[str, dict[str, Any]] = {"provenance": {}}

    def keep(self, what: str, doc: dict[str, Any], reader: str,
             part: str | None = None) -> None:
        """Record `doc` as gitgate.<what> when it changed since last written (with --shard,
        by the one replica whose shard holds it; or, with a `part`, this replica's part of
        it); a failed write is said and tried again."""
        if doc == self._recorded.get(what) or (part is None
                                               and not self.turns.owns(f"gitgate.{what}")):
            return
        writer = self.turns.writer()
        if writer is None:
            return
        try:
            if part is None:
                record_document(writer, self.instance, what, doc)
            else:
                record_part(writer, self.instance, what, part, doc)
        except GitgateError as exc:
            log.warning("cannot record the %s for %s: %s", what, reader, exc.message,
                        extra={"event": f"{what}-unrecorded"})
            return
        self._recorded[what] = doc

    def note_overview(self, plan: Plan) -> None:
        """The page's gates, rollouts and last changes after this pass, kept on the API
        server for `gitgate ui` (the last changes a previous loop recorded are read once, so a
        restart keeps them)."""
        shards = self.turns.shards
        part = shards.identity if shards is not None else None
        known = self.state.overview
        if known is None:
            known = (read_parts(self.cluster, self.instance, "overview").get(part) if part
                     else read_document(self.cluster, self.instance, "overview")) or {}
        self.state.overview = overview_document(plan, self.state.last_plan,
                                                known.get("changes") or {},
                                                self._blame(self.state.last_plan, plan))
        self.keep("overview", self.state.overview, "`gitgate ui`", part)

    def _blame(self, previous: Plan | None, plan: Plan) -> Callable[[str], str | None]:
        """Which commit since `previous` changed a bundle's folder (its content), not a
        commit of the gates that came with it."""
        since = previous.revision if previous is not None else ""
        gates = tuple(sorted({posixpath.dirname(s.gate.file) or "." for s in plan.gates}
                             | {"gates"}))
        root = self.source.cache_dir / self.path
        deepened: list[bool] = []

        def blame(folder: str) -> str | None:
            if not deepened and isinstance(self.source, GitSource):
                self.source.deepen()  # a shallow fetch lacks the commits between
                deepened.append(True)
            return content_commit(root, since, plan.revision, folder, gates)
        return blame
