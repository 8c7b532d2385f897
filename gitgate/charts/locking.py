"""`gitgate lock`: write each chart source's `chart.lock.yaml`, resolving what is not locked
yet (or, with `upgrade`, everything) against the repositories gitgate.yaml allows, and
keeping what still asks for the same. A source that cannot be locked keeps its lock file
as it was."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitgate.charts.stage import ChartFetcher, needs_of
from gitgate.errors import GitgateError
from gitgate.model import Problem, is_under, join
from gitgate.model.chartspec import CHART_LOCK, LockedChart
from gitgate.source.chartlock import format_chart_lock
from gitgate.source.discover import discover
from gitgate.source.tree import scan_repo


@dataclass(frozen=True)
class Locked:
    """What locking did for one source: its lock file, whether it changed, its entries."""

    source: str
    file: str
    entries: tuple[LockedChart, ...]
    changed: bool


def lock_repo(root: Path, fetcher: ChartFetcher, *, under: str = ".",
              upgrade: bool = False) -> tuple[list[Locked], list[Problem]]:
    """Lock every source below `under` that fetches charts (or has a lock nothing needs any
    more: it is removed)."""
    root = root.resolve()
    tree = scan_repo(root)
    discovery = discover(tree)
    config = discovery.config
    done: list[Locked] = []
    problems = [p for p in discovery.problems if is_under(p.source, under)]
    failed = {p.source for p in problems}
    for source in discovery.sources:
        if not is_under(source.path, under) or source.path in failed:
            continue
        file = join(source.path, CHART_LOCK)
        try:
            if not needs_of(source, tree):
                if source.options.locked:
                    (root / file).unlink()
                    done.append(Locked(source.path, file, (), True))
                continue
            entries = fetcher.resolve(source, tree, config.charts, config.tenancy,
                                      upgrade=upgrade)
        except GitgateError as exc:
            problems.append(Problem(source.path, exc.message, exc.file, exc.line, exc.reason))
            continue
        text = format_chart_lock(entries)
        before = tree.read(file) if file in tree.files else None
        if before != text:
            (root / file).write_text(text, encoding="utf-8")
        done.append(Locked(source.path, file, entries, before != text))
    return done, problems
