"""examples/charts, the chart repository examples/repo's published chart (`apps/echo`) comes
from, as the tests use it without serving it: its archives put into a chart store. The store
is content-addressed, so a pass finds the locked digest there, checks it, and fetches nothing.
`make demo` (tools/demo.py) serves the folder instead; tests/integration/test_demo.py runs
that."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
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


class _Silent(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@contextlib.contextmanager
def served(folder: Path, port: int) -> Iterator[None]:
    """`folder` as a chart repository on http://127.0.0.1:`port` (Python's http.server, as
    `make demo` serves examples/charts)."""
    handler = functools.partial(_Silent, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
