"""A loop's trust anchors: the last revision an allowed key signed (`--verify-commits`,
`verify:`) and the last revision whose freeze files gate signers changed (`--gate-signers`,
`gates.signers`). Every later head is judged against them, so they outlive the checkout and
the process: the loop records them on the API server (beside what `status` shows, in the
`gitgate.provenance` record) and hands them back to its source whenever it starts leading.
Only deleting that record starts a loop over from the branch's head (first use)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gitgate.errors import SourceError

_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass(frozen=True)
class TrustAnchors:
    source: str  # the repo and branch they were judged on (`URL#branch`)
    verified: str = ""  # the last revision an allowed key signed ("": none yet)
    gates: str = ""  # the last revision whose freeze files were all trusted ("": none yet)

    def as_dict(self) -> dict[str, str]:
        return {"source": self.source, "verified": self.verified, "gatesTrusted": self.gates}

    @classmethod
    def from_dict(cls, doc: Any) -> TrustAnchors | None:
        """As `as_dict` wrote them; None when nothing was recorded. Raises SourceError when
        the record is not one (a loop judges against nothing else)."""
        if doc is None:
            return None
        fields = (doc.get("source"), doc.get("verified", ""), doc.get("gatesTrusted", "")) \
            if isinstance(doc, dict) else (None, None, None)
        source, verified, gates = fields
        if not isinstance(source, str) or not all(
                isinstance(v, str) and (v == "" or _COMMIT.fullmatch(v))
                for v in (verified, gates)):
            raise SourceError("the trust anchors recorded in gitgate.provenance are not "
                              "commit ids: nothing is judged until the record is repaired or "
                              "deleted (deleting it starts over from the branch's head)")
        return cls(source, str(verified), str(gates))
