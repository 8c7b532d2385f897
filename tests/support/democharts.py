"""examples/charts, the chart repository examples/repo's published chart (`apps/echo`) comes
from, as the tests use it without serving it: its archives put into a chart store. The store
is content-addressed, so a pass finds the locked digest there, checks it, and fetches nothing.
`make demo` (tools/demo.py) serves the folder instead; tests/integration/test_demo.py runs
that."""

from __future__ import annotations

from pathlib import Path

from gitgate.charts.stage import ChartFetcher
from gitgate.charts.store import ChartStore, sha256_digest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CHARTS = REPO_ROOT / "examples" / "charts"


def seeded_store(folder: Path) -> ChartStore:
    """A chart store in `folder` holding every archive of examples/charts."""
    store = ChartStore(folder)
    for archive in sorted(EXAMPLE_CHARTS.glob("*.tgz")):
        data = archive.read_bytes()
        store.put(data, sha256_digest(data))
    return store


def example_fetcher(folder: Path) -> ChartFetcher:
    """The fetch stage for examples/repo, its store seeded from examples/charts."""
    return ChartFetcher(seeded_store(folder))
