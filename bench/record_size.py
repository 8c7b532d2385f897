"""What the facts a Bundle record keeps per live object cost: the labels it was written with,
what a workload uses, and what an acting object acted on (`Entry.labels`, `.uses`, `.acts`).

    .venv/bin/python bench/record_size.py [--bundles 1000] [--json FILE]

- `per_record_10`: a cold pass of bench/run.py's repo (N bundles of 10 objects: a Deployment,
  a Service, 8 ConfigMaps) on the API emulator, then every Bundle record read back as the
  server stores it, as compact JSON: bytes per record with the facts (`facts`: each distinct
  label set written once, in `status.labelSets`), with each entry's labels written out in
  full instead (`inline`), and the same record without the facts (`bare`); median, min and
  max over the records, and the growth (`growth`: facts / bare - 1; `inline_growth`).
- `per_record_100`: a record of 100 objects (10 Deployments, each using 3 ConfigMaps and a
  Secret; 10 Services; 70 ConfigMaps; 10 Secrets), each labelled as a Helm chart labels its
  objects (app.kubernetes.io/name, instance, version, component, part-of, managed-by,
  helm.sh/chart, and a team label), written by gitgate's own record format (spec and status).
- `per_record_10_labelled`: the same with every object of the repo labelled as a Helm chart
  labels its objects (the 8 labels above).
- `rss`: peak RSS (MB) of a process doing that cold pass and a no-op pass after it (`plain`
  repo and `labelled`), once as
  gitgate runs (`facts`) and once writing records without the facts (`bare`: every entry
  written as `Entry.as_dict(facts=False)` would; gitgate still works them out); each in a
  process of its own, against an emulator of its own.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import ROOT, T0, api_server, machine, write_repo  # noqa: E402

LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
          "app.kubernetes.io/component", "app.kubernetes.io/part-of",
          "app.kubernetes.io/managed-by", "helm.sh/chart", "team")


def compact(obj: object) -> int:
    return len(json.dumps(obj, separators=(",", ":")).encode())


def bare(record: dict) -> dict:
    """The record without the facts in `status.objects`."""
    out = json.loads(json.dumps(record))
    (out.get("status") or {}).pop("labelSets", None)
    for entry in (out.get("status") or {}).get("objects") or []:
        for key in ("labels", "uses", "acts"):
            entry.pop(key, None)
    return out


def inline(record: dict) -> dict:
    """The record with each entry's labels written out in full (no `status.labelSets`)."""
    out = json.loads(json.dumps(record))
    sets = (out.get("status") or {}).pop("labelSets", None) or []
    for entry in (out.get("status") or {}).get("objects") or []:
        if isinstance(entry.get("labels"), int):
            entry["labels"] = sets[entry["labels"]]
    return out


def sizes(records: list[dict]) -> dict:
    full = [compact(r) for r in records]
    written_out = [compact(inline(r)) for r in records]
    without = [compact(bare(r)) for r in records]
    return {"records": len(records), "facts_median": statistics.median(full),
            "facts_min": min(full), "facts_max": max(full),
            "inline_median": statistics.median(written_out),
            "bare_median": statistics.median(without),
            "growth": statistics.median(f / b - 1 for f, b in zip(full, without, strict=True)),
            "inline_growth": statistics.median(
                f / b - 1 for f, b in zip(written_out, without, strict=True))}


def record_of_100() -> dict:
    """A 100-object bundle's record as gitgate writes it (spec and status)."""
    from gitgate.apply.inventory import Entry, Inventory
    from gitgate.apply.recordformat import to_bundle, to_bundle_status

    def labels(name: str, component: str) -> tuple[tuple[str, str], ...]:
        values = (name, "shop-prod", "4.12.3", component, "shop", "Helm", "shop-4.12.3",
                  "payments")
        return tuple(sorted(zip(LABELS, values, strict=True)))

    digest = "sha256:" + "0" * 64
    entries = []
    for i in range(10):
        uses = tuple(sorted([f"ConfigMap/shop-w{i}-config-{j}" for j in range(3)]
                            + [f"Secret/shop-w{i}-secret"]))
        entries.append(Entry("apps/v1", "Deployment", "shop", f"shop-w{i}", digest,
                             labels(f"shop-w{i}", "server"), uses))
        entries.append(Entry("v1", "Service", "shop", f"shop-w{i}", digest,
                             labels(f"shop-w{i}", "server"), ()))
        entries.append(Entry("v1", "Secret", "shop", f"shop-w{i}-secret", digest,
                             labels(f"shop-w{i}", "config")))
    entries += [Entry("v1", "ConfigMap", "shop", f"shop-w{i // 7}-config-{i % 7}", digest,
                      labels(f"shop-w{i // 7}", "config")) for i in range(70)]
    inventory = Inventory("shop", tuple(entries), revision="a" * 40, digest="b" * 64,
                          verdict="apply", source="apps/shop",
                          labels=(("team", "payments"),))
    record = to_bundle(inventory)
    record["status"] = to_bundle_status(inventory, 1, "2026-11-22T12:00:00Z")["status"]
    return record


def label_objects(root: Path) -> None:
    """Every object of the generated repo labelled as a Helm chart labels its objects."""
    values = ("app", "shop-prod", "4.12.3", "server", "shop", "Helm", "shop-4.12.3",
              "payments")
    labels = ", ".join(f"{k}: {v}" for k, v in zip(LABELS, values, strict=True))
    for path in [*root.glob("apps/**/*.yaml"), *root.glob("lib/**/*.yaml")]:
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(
            line.rstrip("\n")[:-1] + f", labels: {{{labels}}}}}\n"
            if line.startswith("metadata: {name: ") and line.rstrip().endswith("}") else line
            for line in lines))


def measure(bundles: int, variant: str, labelled: bool) -> dict:
    """One variant's cold pass and no-op pass, in this process (its own emulator)."""
    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    from gitgate.apply import recordformat
    from gitgate.apply.work import ApplyOptions
    from gitgate.passes.onepass import reconcile
    from gitgate.render.cache import RenderCache
    from gitgate.render.tools import find_tools

    if variant == "bare":
        recordformat.objects_status = lambda entries: {  # type: ignore[assignment]
            "objects": [e.as_dict(facts=False) for e in entries]}
    out: dict = {"variant": variant, "bundles": bundles, "labelled": labelled}
    with api_server(None) as kubeconfig, tempfile.TemporaryDirectory(
            prefix="gitgate-bench-") as scratch:
        root = Path(scratch) / "repo"
        write_repo(root, bundles, "gg")
        if labelled:
            label_objects(root)
        cluster = KubeCluster(load_client(kubeconfig))
        options = ApplyOptions(now=T0, instance="bench", force_conflicts=True,
                               resync=timedelta(hours=1))
        cache, tools = RenderCache(), find_tools()
        began = time.perf_counter()
        result = reconcile(root, tools, cluster, options, cache=cache).result
        out["cold_pass_s"] = time.perf_counter() - began
        assert result is not None and all(not b.failed for b in result.bundles)
        began = time.perf_counter()
        reconcile(root, tools, cluster, replace(options, now=T0 + timedelta(minutes=1)),
                  cache=cache)
        out["noop_pass_s"] = time.perf_counter() - began
        records = [r for r in cluster.list_objects("gitgate.io/v1alpha1", "Bundle",
                                                   "gitgate-system")
                   if r["metadata"]["name"] != "bench.namespaces"]
        out["per_record_10"] = sizes(records)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=int, default=1000)
    parser.add_argument("--json", default=str(ROOT / "bench/results/record-size-emulator.json"))
    parser.add_argument("--variant", choices=["facts", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--labelled", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.variant:  # one variant, in a process of its own
        print(json.dumps(measure(args.bundles, args.variant, args.labelled)))
        return 0
    runs = {}
    for repo in ("plain", "labelled"):
        for variant in ("facts", "bare"):
            done = subprocess.run([sys.executable, __file__, "--bundles", str(args.bundles),
                                   "--variant", variant, *(["--labelled"] if repo ==
                                                           "labelled" else [])],
                                  capture_output=True, text=True, check=True)
            runs[repo, variant] = json.loads(done.stdout.strip().splitlines()[-1])
    out = {"machine": machine(), "bundles": args.bundles,
           "per_record_10": runs["plain", "facts"]["per_record_10"],
           "per_record_10_labelled": runs["labelled", "facts"]["per_record_10"],
           "per_record_100": sizes([record_of_100()]),
           "rss": {f"{repo}-{v}": {k: r[k] for k in ("peak_rss_mb", "cold_pass_s",
                                                     "noop_pass_s")}
                   for (repo, v), r in runs.items()}}
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
