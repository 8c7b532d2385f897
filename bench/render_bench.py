"""Benchmark: render + plan on a generated repo, at two sizes. Prints figures and ratios.

    make bench            # or: .venv/bin/python bench/render_bench.py [--bundles N]

Each size is a repo of raw-YAML apps (split by application), kustomize folders and Helm charts.
Reported: wall time of the pure stages (discovery, raw render, bundling, gates, policies),
time of the tool-driven renders, peak Python memory, and per-object costs with the ratio
between the two sizes (near 2.0 for twice the input means linear scaling).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitgate.plan import gate_files, make_plan  # noqa: E402
from gitgate.render.cache import RenderCache  # noqa: E402
from gitgate.render.pipeline import render_repo  # noqa: E402
from gitgate.render.tools import find_tools  # noqa: E402

APP = """apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}-config}}
data: {{LEVEL: info, INDEX: "{i}"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: {name}-secret}}
stringData: {{password: p{i}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: {name}
          image: img:{i}
          envFrom:
            - {{configMapRef: {{name: {name}-config}}}}
            - {{secretRef: {{name: {name}-secret}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80}}]}}
"""


def write_repo(root: Path, raw_sources: int, tool_sources: int) -> int:
    """Write a repo; returns the number of objects it holds."""
    objects = 0
    (root / "gitgate.yaml").write_text(
        "defaults: {placement: {clusterAffinity: {clusterNames: [m1, m2]}}}\n")
    for s in range(raw_sources):
        folder = root / "apps" / f"team{s}"
        folder.mkdir(parents=True)
        (folder / "bundle.yaml").write_text(f"namespace: team{s}\nsplit: app\n"
                                            f"labels: {{tier: t{s % 3}}}\n")
        for a in range(5):
            (folder / f"svc{a}.yaml").write_text(APP.format(name=f"svc{a}", i=s * 10 + a))
            objects += 4
    for s in range(tool_sources):
        kust = root / "kust" / f"k{s}"
        kust.mkdir(parents=True)
        (kust / "kustomization.yaml").write_text(f"namespace: k{s}\nresources: [app.yaml]\n")
        (kust / "app.yaml").write_text(APP.format(name="web", i=s))
        chart = root / "charts" / f"c{s}"
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: c{s}\nversion: 0.1.0\n")
        (chart / "templates" / "app.yaml").write_text(APP.format(name="{{ .Release.Name }}", i=s))
        objects += 8
    gates = root / "gates"
    gates.mkdir()
    (gates / "freeze.yaml").write_text(
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        "spec: {selector: {matchLabels: {tier: t1}}, reason: bench,\n"
        "  windows: [{cron: '0 18 * * 5', duration: 62h, timeZone: Europe/Berlin}]}\n")
    return objects


def measure(raw_sources: int, tool_sources: int, tools) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        objects = write_repo(root, raw_sources, tool_sources)
        at = datetime(2026, 11, 21, 12, tzinfo=UTC)
        started = time.perf_counter()
        pure = render_repo(root, None, only=lambda s: s.kind == "raw")
        raw_done = time.perf_counter()
        plan = make_plan(pure.rendered, gate_files(pure.tree, "gates"), at, "bench")
        plan_done = time.perf_counter()
        tracemalloc.start()  # a second, traced run for memory: tracing slows the timed one
        traced = render_repo(root, None, only=lambda s: s.kind == "raw")
        make_plan(traced.rendered, gate_files(traced.tree, "gates"), at, "bench")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        cache = RenderCache()
        tool_started = time.perf_counter()
        full = render_repo(root, tools, cache=cache)
        tool_done = time.perf_counter()
        assert not full.problems, full.problems
        render_repo(root, tools, cache=cache)  # nothing changed: every source from the cache
        cached_done = time.perf_counter()
        assert cache.misses == 0
        return {
            "objects": objects, "bundles": len(plan.bundles),
            "raw_render_s": raw_done - started, "plan_s": plan_done - raw_done,
            "full_render_s": tool_done - tool_started, "cached_s": cached_done - tool_done,
            "peak_mib": peak / 2**20,
            "held": sum(1 for b in plan.bundles if b.verdict.verdict == "held"),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=50, help="raw sources at the small size")
    parser.add_argument("--tool-sources", type=int, default=4)
    args = parser.parse_args()
    tools = find_tools()
    small = measure(args.sources, args.tool_sources, tools)
    large = measure(args.sources * 2, args.tool_sources * 2, tools)
    print(f"{'size':>6} {'objects':>8} {'bundles':>8} {'held':>5} {'raw+bundle s':>13} "
          f"{'plan s':>8} {'full render s':>14} {'cached s':>9} {'peak MiB':>9} "
          f"{'us/object':>10}")
    for label, row in (("small", small), ("large", large)):
        per_object = (row["raw_render_s"] + row["plan_s"]) / row["objects"] * 1e6
        print(f"{label:>6} {row['objects']:>8} {row['bundles']:>8} {row['held']:>5} "
              f"{row['raw_render_s']:>13.3f} {row['plan_s']:>8.3f} {row['full_render_s']:>14.3f} "
              f"{row['cached_s']:>9.3f} {row['peak_mib']:>9.1f} {per_object:>10.1f}")
    pure_ratio = ((large["raw_render_s"] + large["plan_s"])
                  / (small["raw_render_s"] + small["plan_s"]))
    print(f"ratio large/small: objects {large['objects'] / small['objects']:.2f}, "
          f"pure stages {pure_ratio:.2f}, full render "
          f"{large['full_render_s'] / small['full_render_s']:.2f}, "
          f"peak memory {large['peak_mib'] / small['peak_mib']:.2f}; unchanged repo from the "
          f"render cache: {large['cached_s'] / large['full_render_s']:.2f} of a full render")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
