"""A whole render handed back when nothing it depended on changed (the loop's no-op pass).

The render cache already renders a source again only when its inputs change, but keying
every source, discovering the repo and finishing it still read every file and touch every
object: at 5,000 bundles that is seconds per pass. A render of the whole repo is a pure
function of what `WholeInputs` names: the files (the tree's fingerprint of names and stat
stamps, `source.tree`, and the contents of the files changed too recently for their stamps
to tell, Git's "racy clean" rule), the tools, the budgets, which sources this replica
renders in full, and what the API server's discovery answered for the kinds the repo does
not define. When all of them are as they were, the last render is the answer.

It is not kept when a source failed in a way another attempt may not repeat (a tool's
timeout or crash), nor when the scan could not fingerprint the tree (a file changed just
before the scan could not be read).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitgate.errors import Reason
from gitgate.model import ObjectRef, RenderedSource, Source
from gitgate.model.claims import Holders
from gitgate.render.tools import Tools

ScopeOf = Callable[[str, str], "bool | None"]

# failures another attempt may not repeat: the source is rendered again on every pass
RETRIED = frozenset({Reason.RENDER_FAILED, Reason.INTERNAL_ERROR, Reason.TOOL_MISSING,
                     Reason.ERROR, Reason.SOURCE_FAILED, Reason.CHART_FETCH_FAILED})


@dataclass(frozen=True)
class WholeInputs:
    """What a render of the whole repo depended on besides the files' contents."""

    root: Path
    fingerprint: str
    tools: Tools | None
    budget: object
    full: frozenset[str] | None  # the sources rendered in full (None: every source)
    asked: tuple[tuple[str, str, bool | None], ...]  # discovery: (apiVersion, kind, answer)
    discovery: bool  # whether the API server's discovery was asked at all
    racy: tuple[tuple[str, str], ...] = ()  # (file, SHA-256) of files whose stamps do not tell
    # the records asked who holds an object two sources render: (object, its folder)
    held: tuple[tuple[ObjectRef, str | None], ...] = ()


def in_full(sources: tuple[Source, ...] | list[Source],
            mine: Callable[[Source], bool] | None) -> frozenset[str] | None:
    return None if mine is None else frozenset(s.path for s in sources if mine(s))


def recording(scope_of: ScopeOf | None,
              into: dict[tuple[str, str], bool | None]) -> ScopeOf | None:
    """`scope_of`, noting each question and its answer into `into`."""
    if scope_of is None:
        return None

    def ask(api_version: str, kind: str) -> bool | None:
        answer = scope_of(api_version, kind)
        into[(api_version, kind)] = answer
        return answer
    return ask


def answered(asked: dict[tuple[str, str], bool | None]
             ) -> tuple[tuple[str, str, bool | None], ...]:
    return tuple(sorted((api_version, kind, answer)
                        for (api_version, kind), answer in asked.items()))


def keepable(rendered: tuple[RenderedSource, ...]) -> bool:
    """False when a source failed for a reason that may pass on another attempt."""
    return not any(problem.reason in RETRIED for result in rendered if result.failed
                   for problem in result.problems)


def still_holds(kept: WholeInputs, now: WholeInputs, scope_of: ScopeOf | None,
                content: Callable[[str], str], holders: Holders | None = None) -> bool:
    """Whether a render made under `kept` is the render under `now` (whose `asked` is not
    known yet): the same files (`content`: a file's SHA-256 now, asked only of the files
    that were racy then), tools, budgets and share, and discovery answering every question
    it was asked the same way, and the records (`holders`) each question of a clash."""
    if not now.fingerprint or (kept.root, kept.fingerprint, kept.tools, kept.budget,
                               kept.full, kept.discovery) != (
            now.root, now.fingerprint, now.tools, now.budget, now.full, now.discovery):
        return False
    if any(content(file) != digest for file, digest in kept.racy):
        return False
    if any((holders.objects.get(ref) if holders is not None else None) != folder
           for ref, folder in kept.held):
        return False
    return scope_of is None or all(scope_of(api_version, kind) == answer
                                   for api_version, kind, answer in kept.asked)
