"""Sharding's figures (issue 31): one repo reconciled by 1 and by 2 `gitgate run --shard`
replicas, each its own process (so peak RSS is per replica), on the API emulator (its own
process) or on a real API server (GITGATE_TEST_KUBECONFIG).

    .venv/bin/python bench/shards.py [--sizes 200,1000] [--replicas 1,2] [--runs 3] [--lease 15]
                                     [--json FILE] [--logs DIR]

The repo is bench/run.py's (a third Helm charts, a third kustomize overlays, a third raw YAML;
10 objects per bundle; every bundle depends on the namespaces bundle). The replicas run with
`--expect-replicas` set to their count, `--status-interval 1h` and `--resync 1h`: a periodic
resync (every 10 minutes by default, 25,000 reads at 5,000 bundles) or status read would
fall inside the phases below and be timed as part of them. Per size and replica count:

- cold_s: from starting the replicas until every bundle's record (its Bundle) says the first
  commit is applied;
- change_s: a commit changing every raw bundle, until their records say so;
- noop_pass_s: a pass with nothing changed, asked of one replica at a time through
  `POST /reconcile` (as on its own node), NOOP_PASSES times each, once no record was written
  for 3 s (the replicas' reads of Karmada after the change write theirs) and each pass once
  no replica reads Karmada (each one's read after its last pass is over; from 2026-11-27,
  second session): the slowest
  replica's median pass (gitgate_pass_duration_seconds, its /metrics read once a second).
  The first of them follows the change's pass, whose record writes it reads again (that
  pass is first_noop_s);
- noop_together_s: the same asked of every replica at once (once all are quiet), so that
  they share this machine's cores with each other and with the API server: the median of
  the slowest;
- noop_api_s and noop_requests: over the no-op passes asked of each replica alone, the
  seconds its requests to the API server took (summed: requests in flight together count
  each) and how many it sent, per pass, for the replica with the slowest passes
  (gitgate_api_request_duration_seconds). They include what the replica asks beside the
  pass: its Lease thread's requests and its read of Karmada after the pass; noop_api_top
  (in the JSON) splits them by verb and resource, largest first;
- shard_bundles: the bundles each replica holds (gitgate_shard_bundles);
- peak_rss_mb: each replica's peak resident memory (VmHWM); hwm_cold_mb and hwm_change_mb:
  the larger replica's peak as it stood at the end of the cold apply and of the change, so
  the phase that set the peak is known;
- failover_s (2 replicas): one replica is killed (SIGKILL: its Lease is not handed back),
  and a commit changes FAILOVER_SAMPLE raw bundles of its shard: the seconds until the
  survivor has applied them (their records read one by one, every 0.2 s: a list of all
  the records would take seconds at 5,000 bundles on the harness and load the server the
  survivor writes to). So it times noticing the death, agreeing the new assignment,
  taking over the dead replica's sources and a pass, not the apply of many changes (that is
  change_s). The target is under 2 lease durations.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import api_server, machine, summarized_runs, write_repo  # noqa: E402
from bench.run import table as run_table  # noqa: E402
from gitgate.apiserver.transport import load_client  # noqa: E402
from gitgate.apiserver.verbs import KubeCluster  # noqa: E402
from gitgate.apply.recordformat import bundle_name  # noqa: E402
from gitgate.errors import GitgateError  # noqa: E402
from gitgate.model.shardmap import ShardMap  # noqa: E402

SECRET = "bench-reconcile-secret"
FIELDS = ("bundles", "replicas", "cold_s", "change_s", "first_noop_s", "noop_pass_s",
          "noop_together_s", "noop_api_s", "noop_requests", "shard_bundles", "hwm_cold_mb",
          "hwm_change_mb", "peak_rss_mb", "max_rss_mb", "failover_s")
NOOP_PASSES = 3  # no-op passes asked of each replica alone, and of all together


def terminate(process: subprocess.Popen) -> None:
    """SIGTERM (gitgate's shutdown), then SIGKILL after 30 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def applied(cluster: KubeCluster, instance: str, revision: str, names: set[str]) -> bool:
    try:
        records = cluster.list_objects("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                                       f"gitgate.io/instance={instance}")
    except GitgateError:  # the Bundle type is not there yet: the first pass makes it
        cluster.refresh_discovery()
        return False
    done = {r["spec"]["bundle"] for r in records
            if (r.get("status") or {}).get("lastAppliedRevision") == revision}
    return names <= done


def each_applied(cluster: KubeCluster, instance: str, revision: str, names: set[str]) -> bool:
    """`applied` for a few bundles, read one by one: at 5,000 bundles the list of every
    record takes seconds on the harness, which would both delay seeing the takeover and
    load the survivor's API server while it works (the failover's wait uses this)."""
    for name in names:
        try:
            record = cluster.get("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                                 bundle_name(name, instance))
        except GitgateError:
            return False
        if ((record or {}).get("status") or {}).get("lastAppliedRevision") != revision:
            return False
    return True


def wait(condition, limit: float, what: str, poll: float = 0.2) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > limit:
            raise SystemExit(f"not within {limit:.0f}s: {what}")
        time.sleep(poll)
    return time.monotonic() - started


def records_quiet(cluster: KubeCluster, instance: str, quiet: float = 3.0,
                  limit: float = 300.0) -> None:
    """Until no Bundle of `instance` was written for `quiet` seconds: after a commit's pass
    each replica's read of Karmada writes what it saw into its bundles' records, and a pass
    of another replica that starts before those writes end reads them again (it is then
    not a no-op pass)."""
    seen: frozenset[tuple[str, str]] | None = None
    since = started = time.monotonic()
    while time.monotonic() - since < quiet:
        if time.monotonic() - started > limit:
            raise SystemExit(f"not within {limit:.0f}s: the records settling")
        items = cluster.list_metadata("gitgate.io/v1alpha1", "Bundle", "gitgate-system",
                                      f"gitgate.io/instance={instance}")
        versions = frozenset((str(i["metadata"]["name"]), str(i["metadata"].get(
            "resourceVersion"))) for i in items)
        if versions != seen:
            seen, since = versions, time.monotonic()
        time.sleep(0.5)


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def api_time(port: int) -> dict[str, list[float]]:
    """Per `VERB resource`, the seconds and the count of the replica's requests so far."""
    found: dict[str, list[float]] = {}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            name, _, rest = line.partition("{")
            if name not in ("gitgate_api_request_duration_seconds_sum",
                            "gitgate_api_request_duration_seconds_count"):
                continue
            labels = dict(pair.split("=", 1) for pair in rest.partition("}")[0].split(","))
            key = f"{labels['verb'].strip(chr(34))} {labels['resource'].strip(chr(34))}"
            figures = found.setdefault(key, [0.0, 0.0])
            figures[name.endswith("_count")] += float(line.rsplit(" ", 1)[1])
    return found


def api_per_pass(before: dict[str, list[float]], after: dict[str, list[float]],
                 passes: int) -> dict[str, list[float]]:
    """Seconds and requests per pass between two `api_time` readings, largest first."""
    spent = {key: [round((after[key][0] - before.get(key, [0, 0])[0]) / passes, 3),
                   round((after[key][1] - before.get(key, [0, 0])[1]) / passes, 1)]
             for key in after}
    return dict(sorted(((k, v) for k, v in spent.items() if v[1] > 0),
                       key=lambda item: -item[1][0]))


def ask_pass(port: int) -> None:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/reconcile", method="POST",
                                     data=b"", headers={"Authorization": f"Bearer {SECRET}"})
    urllib.request.urlopen(request, timeout=10).read()


def held_by(port: int, bundles: set[str]) -> set[str]:
    """Those of `bundles` that the replica serving `port` holds, under the assignment it
    acts on (its /status)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as answer:
        shard = json.load(answer)["shard"]
    shards = ShardMap.of(shard["members"])
    return {name for name in bundles if shards.owner(name) == shard["identity"]}


def replicas_quiet(ports: list[int], limit: float = 300.0) -> None:
    """Until no replica of `ports` reads Karmada (`gitgate_karmada_reading`, seen 0 twice,
    0.5 s apart: a pass's read begins a moment after the pass ends). After each pass a
    replica reads Karmada for its share (while Karmada is still binding, every bundle is
    unsettled: about a hundred lists, several seconds), and a pass timed while another
    replica reads shares the 2 cores with that read, which on separate nodes it would not."""
    started, calm = time.monotonic(), 0
    while calm < 2:
        if time.monotonic() - started > limit:
            raise SystemExit(f"not within {limit:.0f}s: the replicas' reads of Karmada")
        reading = any(metric(port, "gitgate_karmada_reading") for port in ports)
        calm = 0 if reading else calm + 1
        time.sleep(0.5)


def noop_passes(ports: list[int], everyone: list[int]) -> float:
    """A pass asked of each replica of `ports` at once, once every replica of `everyone` is
    quiet: the slowest one's duration."""
    replicas_quiet(everyone)
    before = [metric(p, "gitgate_pass_duration_seconds_sum") for p in ports]
    counts = [metric(p, "gitgate_pass_duration_seconds_count") for p in ports]
    for port in ports:
        ask_pass(port)
    # read once a second: a read of /metrics costs the replica 65-90 ms of its interpreter
    # at 2,500 bundles, taken from the pass it would time
    wait(lambda: all(metric(p, "gitgate_pass_duration_seconds_count") > c
                     for p, c in zip(ports, counts, strict=True)), 600, "no-op passes", 1.0)
    return max(metric(p, "gitgate_pass_duration_seconds_sum") - b
               for p, b in zip(ports, before, strict=True))


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


FAILOVER_SAMPLE = 5  # raw bundles of the killed replica changed after the kill


def change_raw(root: Path, bundles: int, old: str, new: str,
               only: set[str] | None = None) -> None:
    """Every raw bundle's ConfigMap values from `old` to `new` (with `only`: those bundles)."""
    for i in range(bundles):
        path = root / f"apps/b{i:04d}/objects.yaml"
        if path.exists() and (only is None or f"b{i:04d}" in only):
            path.write_text(path.read_text().replace(f'value: "{old}"', f'value: "{new}"'))


def measure(bundles: int, replicas: int, kubeconfig: str, lease: int,
            logs: Path | None = None) -> dict:
    instance = f"sh{uuid.uuid4().hex[:6]}"
    cluster = KubeCluster(load_client(kubeconfig))
    with tempfile.TemporaryDirectory(prefix="gitgate-bench-shards-") as scratch:
        work = Path(scratch)
        root = work / "repo"
        write_repo(root, bundles, instance)
        git(root, "init", "-q", "-b", "main")
        git(root, "-c", "user.name=bench", "-c", "user.email=b@b", "add", "-A")
        git(root, "-c", "user.name=bench", "-c", "user.email=b@b", "commit", "-qm", "one")
        (work / "secret").write_text(SECRET)
        names = {f"b{i:04d}" for i in range(bundles)} | {"namespaces"}
        raw = {f"b{i:04d}" for i in range(bundles) if i % 3 == 2}
        ports = [free_port() for _ in range(replicas)]
        started = time.monotonic()
        processes = [subprocess.Popen(
            [sys.executable, "-m", "gitgate.cli", "run", "--shard", "--repo", str(root),
             "--kubeconfig", kubeconfig, "--instance", instance, "--interval", "1s",
             "--status-interval", "1h", "--resync", "1h", "--lease-duration", str(lease),
             "--expect-replicas", str(replicas), "--listen", f"127.0.0.1:{port}",
             "--webhook-secret-file", str(work / "secret"),
             "--cache-dir", str(work / f"cache-{index}")],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=(work / f"{index}.log").open("w"))
            for index, port in enumerate(ports)]
        try:
            head = git(root, "rev-parse", "HEAD")
            wait(lambda: applied(cluster, instance, head, names), 1800, "the cold apply")
            cold = time.monotonic() - started
            hwm_cold = max(peak_rss_mb(process.pid) for process in processes)

            change_raw(root, bundles, "raw", "two")
            git(root, "-c", "user.name=bench", "-c", "user.email=b@b", "commit", "-qam", "two")
            head = git(root, "rev-parse", "HEAD")
            change = wait(lambda: applied(cluster, instance, head, raw), 600, "the change")
            records_quiet(cluster, instance)  # the reads of Karmada after it wrote theirs
            hwm_change = max(peak_rss_mb(process.pid) for process in processes)

            alone, api = [], []
            for port in ports:
                before = api_time(port)
                alone.append([noop_passes([port], ports) for _ in range(NOOP_PASSES)])
                api.append(api_per_pass(before, api_time(port), NOOP_PASSES))
            first = max(passes[0] for passes in alone)  # reads the change's records again
            noop = max(statistics.median(passes) for passes in alone)  # one at a time
            slowest = max(range(len(ports)), key=lambda i: statistics.median(alone[i]))
            together = statistics.median(noop_passes(ports, ports)
                                         for _ in range(NOOP_PASSES))
            shares = [int(metric(p, "gitgate_shard_bundles")) for p in ports]
            rss = [peak_rss_mb(process.pid) for process in processes]

            failover = None
            if replicas > 1:
                sample = set(sorted(held_by(ports[0], raw))[:FAILOVER_SAMPLE])
                processes[0].send_signal(signal.SIGKILL)
                killed = time.monotonic()
                change_raw(root, bundles, "two", "three", sample)
                git(root, "-c", "user.name=bench", "-c", "user.email=b@b", "commit", "-qam",
                    "three")
                head = git(root, "rev-parse", "HEAD")
                wait(lambda: each_applied(cluster, instance, head, sample), 600,
                     "the takeover")
                failover = time.monotonic() - killed
        finally:
            for process in processes:
                terminate(process)
            if logs is not None:  # each replica's log, kept for reading the phases' timelines
                logs.mkdir(parents=True, exist_ok=True)
                for index in range(replicas):
                    kept = logs / f"{bundles}-{replicas}-{instance}-{index}.log"
                    shutil.copy(work / f"{index}.log", kept)
    return {"bundles": bundles, "replicas": replicas, "cold_s": cold, "change_s": change,
            "first_noop_s": first, "noop_pass_s": noop, "noop_together_s": together,
            "noop_api_s": round(sum(v[0] for v in api[slowest].values()), 3),
            "noop_requests": round(sum(v[1] for v in api[slowest].values())),
            "noop_api_top": dict(list(api[slowest].items())[:6]),
            "shard_bundles": "/".join(map(str, shares)),
            "hwm_cold_mb": round(hwm_cold), "hwm_change_mb": round(hwm_change),
            "peak_rss_mb": "/".join(f"{r:.0f}" for r in rss), "max_rss_mb": max(rss),
            "failover_s": failover}


def table(runs: list[dict]) -> str:
    return run_table(runs, FIELDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,1000", help="bundle counts, comma-separated")
    parser.add_argument("--replicas", default="1,2", help="replica counts, comma-separated")
    parser.add_argument("--lease", type=int, default=15,
                        help="--lease-duration, seconds (the default of run)")
    parser.add_argument("--runs", type=int, default=1,
                        help="runs of each configuration; the table shows medians and spreads")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--logs", type=Path, help="keep each replica's log in this folder")
    args = parser.parse_args(argv)
    real = os.environ.get("GITGATE_TEST_KUBECONFIG")
    runs = []
    with api_server(real) as kubeconfig:
        print(f"machine: {machine()}\nserver: {real or 'the API emulator'}", flush=True)
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            for count in (int(r) for r in args.replicas.split(",") if r.strip()):
                for _ in range(max(1, args.runs)):
                    runs.append(measure(size, count, kubeconfig, args.lease, args.logs))
                    print(table([runs[-1]]).splitlines()[-1], flush=True)
    rows = summarized_runs(runs, ("bundles", "replicas"))
    print()
    print(table(rows))
    if args.runs > 1:
        print()
        print(run_table(rows, ("bundles", "replicas", "runs", "cold_s_spread",
                               "change_s_spread", "noop_pass_s_spread",
                               "noop_together_s_spread", "max_rss_mb_spread",
                               "failover_s_spread")))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "runs": runs,
                                               "medians": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
