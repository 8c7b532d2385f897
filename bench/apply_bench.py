"""Benchmark: apply passes over HTTP against the test API emulator. Prints figures and ratios.

    make bench            # or: .venv/bin/python bench/apply_bench.py [--bundles N]

Measured: a first pass that creates everything, a no-op pass (skip-unchanged: no object
write), a pass after one object changed, and a full resync; time, requests and writes of each,
and the ratio of each to the first pass. The emulator is in-process Python, so absolute times
include its own cost; the ratios and the write counts are the point.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitgate.apply.engine import ApplyOptions  # noqa: E402
from gitgate.apply.kube import KubeCluster, load_client  # noqa: E402
from gitgate.pipeline import reconcile  # noqa: E402
from gitgate.render.tools import find_tools  # noqa: E402
from tests.kubeapi.server import KubeApiEmulator  # noqa: E402

T0 = datetime(2026, 11, 18, 12, tzinfo=UTC)


def write_repo(root: Path, bundles: int) -> None:
    (root / "gitgate.yaml").write_text(
        "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n")
    (root / "ns").mkdir(parents=True)
    (root / "ns" / "ns.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: bench}\n")
    for b in range(bundles):
        folder = root / "apps" / f"app{b}"
        folder.mkdir(parents=True)
        (folder / "all.yaml").write_text("".join(
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app{b}-cm{i}, "
            f"namespace: bench}}\ndata: {{index: '{i}'}}\n" for i in range(4)))


def timed_pass(root: Path, tools, cluster: KubeCluster, emulator, at: datetime,
               resync: timedelta) -> tuple[float, int, int]:
    before_requests = len(emulator.state.requests)
    before_writes = len(emulator.state.writes())
    started = time.perf_counter()
    _, result = reconcile(root, tools, cluster, ApplyOptions(now=at, resync=resync))
    elapsed = time.perf_counter() - started
    assert result.ok, [(b.bundle, b.message) for b in result.bundles if b.failed]
    return (elapsed, len(emulator.state.requests) - before_requests,
            len(emulator.state.writes()) - before_writes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=int, default=100)
    args = parser.parse_args()
    tools = find_tools()
    resync = timedelta(minutes=10)
    with tempfile.TemporaryDirectory() as tmp, KubeApiEmulator() as emulator:
        root = Path(tmp)
        write_repo(root, args.bundles)
        kubeconfig = emulator.write_kubeconfig(root.parent / f"{root.name}-kubeconfig")
        cluster = KubeCluster(load_client(str(kubeconfig)))
        rows = [("first pass", timed_pass(root, tools, cluster, emulator, T0, resync))]
        rows.append(("no-op pass", timed_pass(root, tools, cluster, emulator,
                                              T0 + timedelta(minutes=1), resync)))
        (root / "apps" / "app0" / "all.yaml").write_text(
            (root / "apps" / "app0" / "all.yaml").read_text().replace("'0'", "'changed'"))
        rows.append(("one change", timed_pass(root, tools, cluster, emulator,
                                              T0 + timedelta(minutes=2), resync)))
        rows.append(("resync", timed_pass(root, tools, cluster, emulator,
                                          T0 + timedelta(minutes=30), resync)))
        kubeconfig.unlink()
    objects = args.bundles * 4 + 1
    print(f"{args.bundles} bundles, {objects} objects (+ {args.bundles + 1} generated policies)")
    print(f"{'pass':>11} {'seconds':>8} {'requests':>9} {'writes':>7} {'time vs first':>14}")
    first = rows[0][1][0]
    for name, (seconds, requests, writes) in rows:
        print(f"{name:>11} {seconds:>8.3f} {requests:>9} {writes:>7} {seconds / first:>14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
