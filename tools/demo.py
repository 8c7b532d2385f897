"""`make demo`: gitgate's plan of examples/repo, with its published chart fetched for real.

examples/repo's `apps/echo` names a published chart (`helm: {repo: http://127.0.0.1:8879,
chart: echo, version: "~1.4"}`), pinned by its chart.lock.yaml. This serves examples/charts
(a chart repository as a folder: index.yaml and the archive) on that loopback address for
as long as gitgate runs, gives gitgate an empty chart store, and runs `gitgate plan` and
`gitgate render --bundle echo`: the chart is fetched from the served folder, checked against
the locked digest, kept in the store, and rendered offline. Nothing leaves this machine.
The requests the chart repository answered are shown as `chart repository: GET ...`.
"""

from __future__ import annotations

import argparse
import errno
import functools
import http.server
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PORT = 8879  # the port examples/repo's gitgate.yaml, bundle.yaml and chart.lock.yaml name


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Files of the served folder; each request said in one line."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        print(f"chart repository: {self.command} {self.path} {code}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT / "examples" / "repo")
    parser.add_argument("--charts", type=Path, default=ROOT / "examples" / "charts",
                        help="the chart repository folder to serve")
    parser.add_argument("--port", type=int, default=PORT,
                        help="the loopback port to serve it on (the one the repo names)")
    args = parser.parse_args()
    handler = functools.partial(_Quiet, directory=str(args.charts))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        print(f"demo: 127.0.0.1:{args.port} is in use; the example repo's chart repository "
              "is served there (stop what holds the port, or run "
              f"`{sys.executable} tools/demo.py --port N` with a copy of the repo naming N)",
              file=sys.stderr)
        return 1
    thread = threading.Thread(target=server.serve_forever, name="chart-repository",
                              daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory(prefix="gitgate-demo-charts-") as store:
            env = {**os.environ, "GITGATE_CHART_CACHE": store}
            failed = 0
            repo = args.repo.resolve()
            named = str(repo.relative_to(ROOT)) if repo.is_relative_to(ROOT) else str(repo)
            for argv in (["plan", str(repo)], ["render", str(repo), "--bundle", "echo"]):
                print("$ gitgate " + " ".join(argv).replace(str(repo), named), flush=True)
                failed |= subprocess.run([sys.executable, "-m", "gitgate.cli", *argv],
                                         env=env, cwd=ROOT, check=False).returncode
            return 1 if failed else 0
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


if __name__ == "__main__":
    sys.exit(main())
