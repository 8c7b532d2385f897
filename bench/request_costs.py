"""What one kind of request costs the API server (issue 31, item 4): N requests of each kind
gitgate sends in a cold apply, 8 in flight as gitgate sends them, with the server's CPU by
process (kube-apiserver, etcd, Karmada's controllers) read from /proc on the Karmada harness.

    GITGATE_TEST_KUBECONFIG=/tmp/karmada/karmada.kubeconfig \\
        .venv/bin/python bench/request_costs.py [--count 200] [--runs 3] [--json FILE]

The kinds: a ConfigMap applied (one of a bundle's objects; and again under the server's
default field validation, Warn, as gitgate applied before 2026-11-27's seventh session), a
Bundle record's spec applied (its creation), its write-ahead status and its final status (10
entries, through the status subresource), and a bundle's Event, applied and created. Each
kind starts once the harness is idle (`bench.run.idle`), so that no kind pays for what the
one before it caused. On the emulator only the wall time means anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import Turn, api_server, idle, server_processes  # noqa: E402
from gitgate.apiserver.transport import APPLY_PATCH, load_client  # noqa: E402
from gitgate.apiserver.verbs import KubeCluster  # noqa: E402
from gitgate.apply.inventory import NAMESPACE as RECORDS  # noqa: E402
from gitgate.apply.inventory import Entry, Inventory  # noqa: E402
from gitgate.apply.ledger import ensure_bundle_crd, ensure_system_namespace  # noqa: E402
from gitgate.apply.recordformat import (  # noqa: E402
    API_VERSION,
    KIND,
    bundle_name,
    event_for,
    to_bundle,
    to_bundle_status,
)
from gitgate.apply.transitions import Transition  # noqa: E402

NOW = "2026-11-26T12:00:00Z"
CONCURRENCY = 8


class NotServed(Exception):
    """The server does not serve this kind of request (its figure is left out)."""


def inventory(index: int, instance: str, final: bool) -> Inventory:
    entries = tuple(Entry("v1", "ConfigMap", f"{instance}-ns", f"b{index:04d}-config-{i}",
                          "" if not final else f"{i:064x}") for i in range(10))
    return Inventory(bundle=f"b{index:04d}", entries=entries, revision="a" * 40,
                     digest="d" * 64, verdict="Applied" if final else "Pending",
                     message="applied" if final else "first pass in progress",
                     instance=instance, source=f"apps/b{index:04d}",
                     since=NOW, last_applied=NOW if final else "",
                     applied_revision="a" * 40 if final else "",
                     applied_digest="d" * 64 if final else "",
                     history=({"revision": "a" * 40, "digest": "d" * 64, "at": NOW,
                               "outcome": "Applied", "by": "loop"},) if final else ())


def kinds(cluster: KubeCluster, instance: str) -> dict[str, Callable[[int], Any]]:
    namespace = f"{instance}-ns"
    uids: dict[int, str] = {}

    def configmap(i: int) -> Any:
        return cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"b{i:04d}-config-0", "namespace": namespace,
            "labels": {"gitgate.io/bundle": f"b{i:04d}"}}, "data": {"value": "raw"}})

    def configmap_warned(i: int) -> Any:
        """The same creation under the server's default field validation (Warn), as gitgate
        applied before the seventh session of 2026-11-27."""
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"b{i:04d}-config-1", "namespace": namespace,
            "labels": {"gitgate.io/bundle": f"b{i:04d}"}}, "data": {"value": "raw"}}
        path = cluster.path_for("v1", "ConfigMap", namespace, obj["metadata"]["name"])
        status, answer = cluster.request("PATCH", path, body=obj, content_type=APPLY_PATCH,
                                         query={"fieldManager": "gitgate",
                                                "fieldValidation": "Warn"})
        assert status == 201, answer
        return answer

    def spec(i: int) -> Any:
        answer = cluster.apply(to_bundle(inventory(i, instance, final=False)))
        uids[i] = str((answer.obj.get("metadata") or {}).get("uid") or "")
        return answer

    def status(final: bool) -> Callable[[int], Any]:
        return lambda i: cluster.apply(to_bundle_status(inventory(i, instance, final), 1, NOW),
                                       subresource="status")

    def merged(i: int) -> Any:
        body = to_bundle_status(replace(inventory(i, instance, True), message="patched"), 1,
                                NOW)
        path = cluster.path_for(API_VERSION, KIND, RECORDS, bundle_name(f"b{i:04d}", instance))
        status, answer = cluster.request("PATCH", path + "/status", body={
            "status": body["status"]}, content_type="application/merge-patch+json",
            query={"fieldManager": "gitgate"})
        if status == 405:  # the emulator patches no status subresource
            raise NotServed(str(answer.get("message")))
        assert status == 200, answer
        return answer

    def flat(i: int) -> Any:
        """The final status with each entry as one string: what a flatter record costs."""
        body = to_bundle_status(replace(inventory(i, instance, True), message="flat"), 1, NOW)
        body["status"]["objects"] = ["|".join(e.values()) for e in body["status"]["objects"]]
        return cluster.apply(body, subresource="status", force=True)

    def event(created: bool) -> Callable[[int], Any]:
        def send(i: int) -> Any:
            obj = event_for(inventory(i, instance, True), uids.get(i, ""),
                            Transition("Normal", "Applied", "Apply", f"applied {i}"
                                       + (" (created)" if created else "")), NOW, i)
            if not created:
                return cluster.apply(obj)
            path = cluster.path_for("events.k8s.io/v1", "Event", obj["metadata"]["namespace"])
            status, body = cluster.request("POST", path, body=obj,
                                           query={"fieldManager": "gitgate"})
            assert status in (200, 201), body
            return body
        return send

    return {"configmap_apply": configmap, "configmap_apply_warn": configmap_warned,
            "bundle_spec_apply": spec,
            "writeahead_status_apply": status(False), "final_status_apply": status(True),
            "final_status_merge_patch": merged, "final_status_flat_entries_apply": flat,
            "event_apply": event(False), "event_create": event(True)}


def measure(kubeconfig: str, count: int, settle: bool = True,
            only: frozenset[str] = frozenset()) -> dict[str, dict]:
    """`settle`: each kind waits for an idle harness first (a test that checks the tool
    runs does not wait); `only`: these kinds alone (all when empty)."""
    cluster = KubeCluster(load_client(kubeconfig))
    processes = server_processes(kubeconfig)
    instance = f"rq{uuid.uuid4().hex[:6]}"
    ensure_system_namespace(cluster)
    ensure_bundle_crd(cluster)
    cluster.apply({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": f"{instance}-ns"}})
    out: dict[str, dict] = {}
    try:
        for name, send in kinds(cluster, instance).items():
            if only and name not in only and not (name == "bundle_spec_apply" and only & {
                    "event_apply", "event_create"}):  # an event's regarding is a record
                continue
            if settle:
                idle(processes)
            turn = Turn(processes, children=False)
            try:
                with ThreadPoolExecutor(CONCURRENCY) as pool:
                    list(pool.map(send, range(count)))
            except NotServed as exc:
                print(f"{name}: not served here ({exc})", file=sys.stderr)
                continue
            out[name] = turn.done()
    finally:
        cluster.delete("v1", "Namespace", "", f"{instance}-ns")
        for i in range(count):
            cluster.delete(API_VERSION, KIND, RECORDS, bundle_name(f"b{i:04d}", instance))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200, help="requests of each kind")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--kinds", default="", help="these kinds alone, comma-separated")
    args = parser.parse_args(argv)
    only = frozenset(k for k in args.kinds.split(",") if k)
    with api_server(os.environ.get("GITGATE_TEST_KUBECONFIG")) as kubeconfig:
        runs = [measure(kubeconfig, args.count, only=only) for _ in range(args.runs)]
    print(f"{args.count} requests of each kind, {CONCURRENCY} in flight; median of "
          f"{args.runs} (server CPU ms per request, by process)")
    print("| kind | wall ms / request | client CPU ms | server CPU ms | by process |")
    print("| --- | --- | --- | --- | --- |")
    for name in [name for name in runs[0] if all(name in run for run in runs)]:
        def med(get: Callable[[dict], float], name: str = name) -> float:
            return statistics.median(get(run[name]) for run in runs) * 1000 / args.count
        names = sorted({p for run in runs for p in run[name]["server"]})
        parts = ", ".join(f"{p} {med(lambda t, p=p: t['server'].get(p, 0.0)):.2f}"
                          for p in names)
        print(f"| {name} | {med(lambda t: t['wall_s']):.2f} | "
              f"{med(lambda t: t['client_cpu_s']):.2f} | "
              f"{med(lambda t: t['server_cpu_s']):.2f} | {parts} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"count": args.count, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
