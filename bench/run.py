"""gitgate's benchmark: one command, figures and ratios (`make bench`).

    .venv/bin/python bench/run.py [--sizes 50,200,1000] [--runs 3] [--json FILE]

Per size N, a generated repo of N bundles (a third Helm charts, a third kustomize overlays
of one shared base, a third raw YAML; 10 objects each: a Deployment, a Service, 8 ConfigMaps)
in namespaces of 100 bundles, and:

- cold render (gitgate, empty render cache) vs the same sources rendered one after the other
  by direct `helm template` / `kustomize build` calls (render_ratio = serial / gitgate);
- cold apply (one apply pass of the rendered plan to an empty server: objects, generated
  PropagationPolicies, inventories) vs `kubectl apply --server-side` of the same objects and
  policies in other namespaces of the same server (apply_ratio = gitgate / kubectl); on
  the Karmada harness each tool's turn starts once the bindings the other one caused are
  made and the harness's processes are idle (under IDLE_CORES together: Karmada syncs
  Works, statuses and the last run's deletions for minutes after the bindings);
- on Karmada, the seconds from the start of each tool's turn until Karmada has bound every
  template it wrote (a ResourceBinding each: `*_bound_s`, bound_ratio = gitgate / kubectl),
  what a user waits for before anything reaches a member;
- a no-op pass (nothing changed: render, plan and apply; renders, requests and writes);
- one bundle changed (one ConfigMap value in a raw bundle): time, renders, objects written;
- a resync with one object drifted (edited by another field manager): objects written;
- peak RSS of the process that ran gitgate's side (each size runs in its own process);
- on the Karmada harness, the CPU each turn cost (`kubectl_turn`, `gitgate_turn`: the client's
  and the server's by process, kube-apiserver, etcd and Karmada's controllers) and the same
  until Karmada settled (`*_settled`), the share of the machine's cores each turn left idle
  (`idle_share`) and the ResourceBindings Karmada made during it (`bindings_made`), in the
  JSON: what makes the apply ratio swing.

On the Karmada harness two options make the cold apply comparison cleaner and quicker:
`--fresh-harness` starts the harness afresh (its `down.sh`, then `up.sh`, with KARMADA_SRC
set and KARMADA_HARNESS naming the harness folder, `../shared/karmada-harness` by default)
before the renders and again before gitgate's turn, so neither tool's turn inherits the
other's objects (the IPAddress of every Service sits on Karmada's waiting list, which each
new policy scans), its etcd or its controllers' backlog; gitgate's namespace and Bundle type
are then made before its turn, as `deploy/` installs them. `--turns-only` measures the
renders and the two cold apply turns alone: no binding wait, no passes after them.

The server is the test API emulator (tests/kubeapi, in its own process) unless
GITGATE_TEST_KUBECONFIG points at a real API server; then kubectl must be found ($KUBECTL,
PATH, the venv `make setup` filled, or the Karmada harness's assets), and every name is unique
to the run and deleted after it.
Placement names a cluster that does not exist, so Karmada dispatches nothing to members.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

T0 = datetime(2026, 11, 22, 12, tzinfo=UTC)
PER_NAMESPACE = 100
CPU_FIELDS = ("bundles", "apply_ratio", "kubectl_bound_s", "gitgate_bound_s", "bound_ratio",
              "kubectl_apply_s", "kubectl_client_cpu_s",
              "kubectl_server_cpu_s", "kubectl_settled_cpu_s", "cold_apply_s",
              "gitgate_client_cpu_s", "gitgate_server_cpu_s", "gitgate_settled_cpu_s")
KUBECTL_FALLBACKS = ("/tmp/karmada-assets/kubectl",)
FIELDS = ("bundles", "objects", "cold_render_s", "serial_tools_s", "render_ratio",
          "cold_apply_s", "kubectl_apply_s", "apply_ratio", "noop_s", "noop_renders",
          "noop_requests", "one_change_s", "one_change_renders", "one_change_writes",
          "resync_s", "resync_writes", "peak_rss_mb")

OBJECTS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: app
          image: nginx:{version}
          envFrom: [{{configMapRef: {{name: {name}-config-0}}}}]
---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80}}]}}
""" + "".join(f"""---
apiVersion: v1
kind: ConfigMap
metadata: {{{{name: {{name}}-config-{i}}}}}
data: {{{{index: "{i}", value: "{{value}}"}}}}
""" for i in range(8))


# ------------------------------------------------------------------------------ the repo
def repo_base(bundles: int, prefix: str) -> tuple[list[str], dict[str, str]]:
    """The namespaces of N bundles (PER_NAMESPACE to each) and the files every generated repo
    starts with: gitgate.yaml (placed nowhere) and the bundle of the namespaces."""
    namespaces = [f"{prefix}-{n}" for n in range((bundles - 1) // PER_NAMESPACE + 1)]
    return namespaces, {
        "gitgate.yaml": "paths: [ns, apps]\ndefaults:\n  placement: {clusterAffinity: "
                        "{clusterNames: [gitgate-bench-nowhere]}}\n",
        "ns/bundle.yaml": "name: namespaces\n",
        "ns/namespaces.yaml": "".join(f"---\napiVersion: v1\nkind: Namespace\nmetadata: "
                                      f"{{name: {n}}}\n" for n in namespaces),
    }


def write_repo(root: Path, bundles: int, prefix: str) -> list[tuple[str, Path]]:
    """The generated repo; returns each tool-rendered source (kind, folder)."""
    namespaces, files = repo_base(bundles, prefix)
    files |= {
        "lib/base/kustomization.yaml": "resources: [objects.yaml]\n",
        "lib/base/objects.yaml": OBJECTS.format(name="app", version="1.25", value="base"),
    }
    tooled: list[tuple[str, Path]] = []
    for i in range(bundles):
        folder = f"apps/b{i:04d}"
        files[f"{folder}/bundle.yaml"] = (f"name: b{i:04d}\nnamespace: "
                                          f"{namespaces[i // PER_NAMESPACE]}\n"
                                          "dependsOn: [namespaces]\n")
        if i % 3 == 0:
            files[f"{folder}/Chart.yaml"] = f"apiVersion: v2\nname: b{i:04d}\nversion: 1.0.0\n"
            files[f"{folder}/values.yaml"] = "version: '1.25'\nvalue: chart\n"
            files[f"{folder}/templates/objects.yaml"] = OBJECTS.format(
                name="{{ .Release.Name }}", version="{{ .Values.version }}",
                value="{{ .Values.value }}")
            tooled.append(("helm", root / folder))
        elif i % 3 == 1:
            files[f"{folder}/kustomization.yaml"] = (f"resources: [../../lib/base]\n"
                                                     f"namePrefix: b{i:04d}-\n")
            tooled.append(("kustomize", root / folder))
        else:
            files[f"{folder}/objects.yaml"] = OBJECTS.format(name=f"b{i:04d}", version="1.25",
                                                             value="raw")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tooled


def serial_tools(tools, sources: list[tuple[str, Path]]) -> float:
    """The same charts and kustomizations rendered one after the other by the tools."""
    started = time.perf_counter()
    for kind, folder in sources:
        if kind == "helm":
            command = [tools.helm, "template", folder.name, str(folder)]
        else:
            command = [*tools.kustomize, str(folder)]
        subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


# ------------------------------------------------------------------------------ one size
class Counting:
    """gitgate's API adapter, counting the requests it sends."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.requests = 0
        original = cluster.request

        def counted(*args, **kwargs):
            self.requests += 1
            return original(*args, **kwargs)

        cluster.request = counted


def kubectl_objects(plan, prefix: str, other: str) -> list[dict]:
    """What gitgate writes to Karmada for the plan (its objects and the PropagationPolicies
    that propagate them, not its own inventories), moved to the `other` namespaces: a
    pipeline that deploys to Karmada with kubectl has to write the policies too."""
    from gitgate.karmada.policy import is_policy
    items = []
    for bundle in sorted(plan.bundles, key=lambda b: b.bundle.name != "namespaces"):
        for obj in (*bundle.desired, *bundle.policies):
            moved = json.loads(json.dumps(obj).replace(f'"{prefix}-', f'"{other}-'))
            if is_policy(moved) and not moved["metadata"].get("namespace"):
                moved["metadata"]["name"] = f"{other}-{moved['metadata']['name']}"
            items.append(moved)
    return items


def kubectl_apply(kubectl: str, kubeconfig: str, plan, prefix: str, other: str,
                  scratch: Path, emulated: bool) -> float:
    """`kubectl_objects` applied by kubectl, as one file."""
    items = kubectl_objects(plan, prefix, other)
    path = scratch / "kubectl.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    started = time.perf_counter()
    # the emulator serves no OpenAPI document, which kubectl's client-side validation needs;
    # a real server gets kubectl's defaults
    validate = ["--validate=false"] if emulated else []
    done = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side",
                           "--field-manager", "bench-kubectl", *validate, "-f", str(path)],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"kubectl apply failed: {done.stderr[-2000:]}")
    return seconds


def server_processes(kubeconfig: str) -> dict[int, str]:
    """The processes of the Karmada harness serving `kubeconfig` (its STATE folder keeps
    their pids), by pid: kube-apiserver, etcd, Karmada's controllers, the members' managers.
    None elsewhere (a remote server: its CPU cannot be read from here)."""
    pids = Path(kubeconfig).parent / "pids"
    found: dict[int, str] = {}
    if not pids.is_file():
        return found
    for line in pids.read_text().split():
        with contextlib.suppress(OSError, ValueError):
            argv = Path(f"/proc/{int(line)}/cmdline").read_bytes().split(b"\0")
            found[int(line)] = Path(argv[0].decode()).name
    return found


def cpu_seconds(processes: dict[int, str]) -> dict[str, float]:
    """CPU seconds (user + system) each kind of server process has used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for pid, name in processes.items():
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            used[name] = used.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return used


def machine_ticks() -> tuple[int, int]:
    """The whole machine's CPU ticks so far (all cores): (busy, idle or waiting). (0, 0)
    where /proc/stat cannot be read."""
    try:
        fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + fields[4]
    return sum(fields[:8]) - idle, idle  # guest time is already counted in user


class Turn:
    """The CPU a tool's turn cost: the server's processes, by kind, and the client's own; the
    share of the machine's cores left idle; and, on Karmada, how many ResourceBindings its
    controllers made meanwhile (`count_bindings`), work that runs at Karmada's own pace
    beside the tool's writes."""

    def __init__(self, processes: dict[int, str], children: bool,
                 count_bindings: Callable[[], int | None] = lambda: None,
                 ticks: Callable[[], tuple[int, int]] = machine_ticks) -> None:
        self.processes, self.children = processes, children
        self.count_bindings, self.read_ticks = count_bindings, ticks
        self.bindings = count_bindings()
        self.ticks = ticks()
        self.server = cpu_seconds(processes)
        self.client = self._client()
        self.began = time.perf_counter()

    def _client(self) -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN if self.children
                                   else resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def done(self) -> dict:
        now = cpu_seconds(self.processes)
        wall = round(time.perf_counter() - self.began, 2)
        client = round(self._client() - self.client, 2)
        busy, idle = (now_t - then_t for now_t, then_t in zip(self.read_ticks(), self.ticks,
                                                               strict=True))
        server = {name: round(now[name] - self.server.get(name, 0.0), 2) for name in now}
        bindings = self.count_bindings()
        return {"wall_s": wall, "client_cpu_s": client,
                "server_cpu_s": round(sum(server.values()), 2), "server": server,
                "idle_share": round(idle / (busy + idle), 3) if busy + idle else None,
                "bindings_made": (bindings - self.bindings if bindings is not None
                                  and self.bindings is not None else None)}


IDLE_CORES = 0.3  # the harness is idle when its processes use less than this, together


def idle(processes: dict[int, str], window: float = 5.0, limit: float = 600.0) -> float:
    """Wait until the harness's processes used under IDLE_CORES over a whole `window` (a
    steady count of bindings is not enough: Karmada keeps syncing Works, statuses and the
    last run's deletions for minutes after it). Returns the seconds waited."""
    started = time.monotonic()
    while processes and time.monotonic() - started < limit:
        before = sum(cpu_seconds(processes).values())
        time.sleep(window)
        if sum(cpu_seconds(processes).values()) - before < IDLE_CORES * window:
            break
    return round(time.monotonic() - started, 1)


def settle(cluster, emulated: bool, processes: dict[int, str], quiet: float = 5.0,
           limit: float = 300.0) -> None:
    """On Karmada, wait until its controllers stop creating ResourceBindings for what the last
    tool wrote (the count is steady for `quiet` seconds), then until the harness is idle
    (`idle`), so that one tool's turn does not pay for the work the other one's writes
    caused."""
    if emulated:
        return
    _steady_bindings(cluster, quiet, limit)
    idle(processes)


def binding_count(cluster) -> int | None:
    """How many ResourceBindings Karmada holds (one list of one item); None elsewhere."""
    status, body = cluster.request("GET", "/apis/work.karmada.io/v1alpha2/resourcebindings",
                                   query={"limit": "1"})
    if status != 200:
        return None
    meta = body.get("metadata") or {}
    return len(body.get("items") or []) + int(meta.get("remainingItemCount") or 0)


def _steady_bindings(cluster, quiet: float, limit: float) -> None:
    last, steady_since, deadline = None, time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline:
        count = binding_count(cluster)
        if count is None:
            return  # not Karmada
        if count != last:
            last, steady_since = count, time.monotonic()
        elif time.monotonic() - steady_since >= quiet:
            return
        time.sleep(1.0)


def bound(cluster, namespaces: list[str], expected: int, began: float,
          limit: float = 1800.0) -> float | None:
    """Seconds from `began` (a turn's start) until Karmada has made a ResourceBinding for
    each of the `expected` templates in `namespaces`: when what a tool wrote is bound to its
    policies, which is what a user waits for. Polled after the turn, once a second (a list
    of one item per namespace), so the turn itself does not pay for it. None on a server
    that is not Karmada, or past `limit`."""
    path = "/apis/work.karmada.io/v1alpha2/namespaces/{}/resourcebindings"
    while time.perf_counter() - began < limit:
        count = 0
        for namespace in namespaces:
            status, body = cluster.request("GET", path.format(namespace), query={"limit": "1"})
            if status != 200:
                return None
            meta = body.get("metadata") or {}
            count += len(body.get("items") or []) + int(meta.get("remainingItemCount") or 0)
        if count >= expected:
            return round(time.perf_counter() - began, 2)
        time.sleep(1.0)
    return None


def harness_scripts() -> Path:
    return Path(os.environ.get("KARMADA_HARNESS")
                or ROOT.parent / "shared" / "karmada-harness")


def restart_harness(kubeconfig: str) -> None:
    """The Karmada harness whose STATE folder holds `kubeconfig`, stopped and started afresh
    (same folder, same ports, same kubeconfig); SystemExit naming what is missing."""
    state, scripts = Path(kubeconfig).parent, harness_scripts()
    if not os.environ.get("KARMADA_SRC") or not (scripts / "up.sh").is_file():
        raise SystemExit("--fresh-harness needs KARMADA_SRC (the fetched karmada-io/karmada "
                         f"git dir) and the harness's up.sh in {scripts} (KARMADA_HARNESS)")
    subprocess.run([str(scripts / "down.sh"), str(state)], capture_output=True, check=False)
    started = subprocess.run([str(scripts / "up.sh")], capture_output=True, text=True,
                             env={**os.environ, "STATE": str(state)}, check=False)
    if started.returncode != 0:
        raise SystemExit(f"the harness did not start again: {started.stderr[-2000:]}")


def fresh_harness(kubeconfig: str) -> tuple[Any, Counting, dict[int, str]]:
    """The harness started afresh (`restart_harness`), idle, with gitgate's namespace and
    Bundle CRD made as `deploy/` installs them: a client of it (counting its requests) and
    its processes."""
    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    from gitgate.apply.ledger import ensure_system_namespace
    restart_harness(kubeconfig)
    cluster = KubeCluster(load_client(kubeconfig))
    counter = Counting(cluster)
    processes = server_processes(kubeconfig)
    ensure_system_namespace(cluster)
    idle(processes)
    counter.requests = 0
    return cluster, counter, processes


def cold_pass(plan, cluster, options):
    """The engine's pass of `plan` over the records read afresh, through one Ledger, as a
    pass of the loop makes it."""
    from gitgate.apply.engine import run_pass
    from gitgate.apply.ledger import Ledger, read_inventories, stored_of
    from gitgate.timespec import rfc3339
    inventories = read_inventories(cluster, options.instance)
    ledger = Ledger({}, False, stored=stored_of(inventories), now=rfc3339(options.now),
                    origin=options.origin)
    return run_pass(plan, cluster, options, ledger, inventories)


def measure(bundles: int, kubeconfig: str, kubectl: str | None, emulated: bool,
            fresh: bool = False, turns_only: bool = False) -> dict:
    """One size's figures (see the module's docstring). `fresh`: the harness is started
    afresh before the renders and before gitgate's turn; `turns_only`: the renders and the
    two cold apply turns, nothing after them."""
    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    from gitgate.apply.recordcache import RecordCache
    from gitgate.apply.work import ApplyOptions
    from gitgate.passes.onepass import plan_rendered, reconcile, with_origin
    from gitgate.render.cache import RenderCache
    from gitgate.render.pipeline import render_repo
    from gitgate.render.tools import find_tools

    run = uuid.uuid4().hex[:6]
    prefix, other = f"gg{run}", f"kc{run}"
    tools = find_tools()
    if fresh:
        restart_harness(kubeconfig)
    cluster = KubeCluster(load_client(kubeconfig))
    counter = Counting(cluster)
    out: dict = {"bundles": bundles, "fresh_harness": fresh}
    with tempfile.TemporaryDirectory(prefix="gitgate-bench-") as scratch_name:
        scratch = Path(scratch_name)
        root = scratch / "repo"
        sources = write_repo(root, bundles, prefix)
        processes = server_processes(kubeconfig)
        settle(cluster, emulated, processes)  # the last run's clean-up, still going on
        out["serial_tools_s"] = serial_tools(tools, sources)
        cache = RenderCache()
        started = time.perf_counter()
        rendered = render_repo(root, tools, cache=cache)
        out["cold_render_s"] = time.perf_counter() - started
        problems = rendered.problems
        if problems:
            raise SystemExit(f"the generated repo does not render: {problems[:3]}")
        plan = plan_rendered(rendered, T0, instance=run)  # its policies named as a pass names them
        out["objects"] = sum(len(b.desired) for b in plan.bundles)
        templates = sum(1 for b in plan.bundles for o in b.desired
                        if o["metadata"].get("namespace"))
        namespaces = sorted({o["metadata"]["namespace"] for b in plan.bundles
                             for o in b.desired if o["metadata"].get("namespace")})
        options = with_origin(ApplyOptions(now=T0, instance=run, force_conflicts=True,
                                           resync=timedelta(hours=1)), root)  # as a pass's
        try:
            # kubectl first: on Karmada, gitgate's policies make its controllers bind every
            # object gitgate wrote, work that would otherwise run during kubectl's turn
            settle(cluster, emulated, processes)  # and what rendering left
            def count() -> int | None:
                return None if emulated else binding_count(cluster)
            turn = Turn(processes, children=True, count_bindings=count)
            out["kubectl_apply_s"] = (kubectl_apply(kubectl, kubeconfig, plan, prefix, other,
                                                    scratch, emulated) if kubectl else None)
            out["kubectl_turn"] = turn.done()
            if not emulated and not turns_only:
                out["kubectl_bound_s"] = bound(cluster, [n.replace(prefix, other, 1)
                                                         for n in namespaces],
                                               templates, turn.began)
            if fresh:  # gitgate's turn on a harness that never saw kubectl's
                cluster, counter, processes = fresh_harness(kubeconfig)
            else:
                settle(cluster, emulated, processes)
                out["kubectl_settled"] = turn.done()  # the turn and the controllers' backlog
            turn = Turn(processes, children=False, count_bindings=count)
            started = time.perf_counter()
            result = cold_pass(plan, cluster, options)
            out["cold_apply_s"] = time.perf_counter() - started
            out["gitgate_turn"] = turn.done()
            if not result.ok:
                raise SystemExit("cold apply failed: " + "; ".join(
                    f"{b.bundle}: {b.message}" for b in result.bundles if b.failed)[:2000])
            for tool in ("kubectl", "gitgate"):
                out[f"{tool}_server_cpu_s"] = out[f"{tool}_turn"]["server_cpu_s"]
                out[f"{tool}_client_cpu_s"] = out[f"{tool}_turn"]["client_cpu_s"]
            if turns_only:
                return _ratios(out)
            if not emulated:
                out["gitgate_bound_s"] = bound(cluster, namespaces, templates, turn.began)
            settle(cluster, emulated, processes)
            out["gitgate_settled"] = turn.done()
            for tool in ("kubectl", "gitgate"):
                if f"{tool}_settled" in out:
                    out[f"{tool}_settled_cpu_s"] = out[f"{tool}_settled"]["server_cpu_s"]

            records = RecordCache()  # the loop's: a record unchanged since is not read again

            def timed(at: datetime) -> tuple[float, object, int, int]:
                """A whole pass (render, plan, apply): seconds, result, renders, requests."""
                requests_before = counter.requests
                began = time.perf_counter()
                passed = reconcile(root, tools, cluster, replace(options, now=at),
                                   cache=cache, migrate_records=False,
                                   records=records).result  # as the loop
                seconds = time.perf_counter() - began
                return seconds, passed, cache.misses, counter.requests - requests_before

            # the first pass after the cold apply reads every record once (as a loop's first
            # pass does); the no-op figure is the pass after it, as the loop runs it
            out["first_noop_s"] = timed(T0 + timedelta(seconds=30))[0]
            seconds, passed, renders, requests = timed(T0 + timedelta(minutes=1))
            out.update(noop_s=seconds, noop_renders=renders, noop_requests=requests,
                       noop_writes=_writes(passed))
            raw = next(i for i in range(bundles) if i % 3 == 2)
            changed = root / f"apps/b{raw:04d}/objects.yaml"
            changed.write_text(changed.read_text().replace('value: "raw"', 'value: "new"', 1))
            seconds, passed, renders, _ = timed(T0 + timedelta(minutes=2))
            out.update(one_change_s=seconds, one_change_renders=renders,
                       one_change_writes=_writes(passed))
            namespace = f"{prefix}-0"
            path = cluster.path_for("v1", "ConfigMap", namespace, "b0002-config-3")
            status, body = cluster.request("PATCH", path, body={"data": {"value": "drifted"}},
                                           content_type="application/merge-patch+json",
                                           query={"fieldManager": "bench-drift"})
            assert status == 200, body
            seconds, passed, _, _ = timed(T0 + timedelta(hours=2))
            out.update(resync_s=seconds, resync_writes=_writes(passed))
        finally:
            if not fresh:  # a fresh harness is started anew by the next run
                _clean(cluster, prefix, other, run)
    return _ratios(out)


def _ratios(out: dict) -> dict:
    """The run's peak RSS and the ratios of what it measured."""
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["render_ratio"] = out["serial_tools_s"] / out["cold_render_s"]
    out["apply_ratio"] = (out["cold_apply_s"] / out["kubectl_apply_s"]
                          if out["kubectl_apply_s"] else None)
    if out.get("gitgate_bound_s") and out.get("kubectl_bound_s"):
        out["bound_ratio"] = out["gitgate_bound_s"] / out["kubectl_bound_s"]
    return out


def _writes(result) -> int:
    """Objects written by the pass (created, configured, recreated, deleted)."""
    return sum(len(b.applied) + len(b.pruned) for b in result.bundles)


def _clean(cluster, prefix: str, other: str, run: str) -> None:
    from gitgate.apply.inventory import NAMESPACE
    from gitgate.apply.recordformat import API_VERSION, KIND
    from gitgate.karmada.policy import GROUP, policy_name
    from gitgate.model.ownership import INSTANCE_LABEL
    for namespace in cluster.list_objects("v1", "Namespace"):
        name = namespace["metadata"]["name"]
        if name.startswith((prefix + "-", other + "-")):
            cluster.delete("v1", "Namespace", "", name)
    for api, kind in ((API_VERSION, KIND), ("events.k8s.io/v1", "Event")):
        for record in cluster.list_objects(api, kind, NAMESPACE, f"{INSTANCE_LABEL}={run}"):
            cluster.delete(api, kind, NAMESPACE, record["metadata"]["name"])
    namespaces = policy_name("namespaces")  # the cluster-scoped policy of each tool
    for name in (namespaces, f"{other}-{namespaces}"):
        cluster.delete(f"{GROUP}/v1alpha1", "ClusterPropagationPolicy", "", name)


# ------------------------------------------------------------------------------ the run
def find_kubectl(required: bool) -> str | None:
    venv = str(Path(sys.executable).parent / "kubectl")  # `make setup` installs one there
    for candidate in (os.environ.get("KUBECTL"), shutil.which("kubectl"), venv,
                      *KUBECTL_FALLBACKS):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    if required:
        raise SystemExit("a real server needs kubectl for the comparison: set KUBECTL or put "
                         "kubectl on PATH")
    return None


EMULATOR = """
import sys, threading
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.kubeapi.server import KubeApiEmulator
with KubeApiEmulator() as api:
    api.write_kubeconfig(Path({kubeconfig!r}))
    print("ready", flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def api_server(real: str | None) -> Iterator[str]:
    """The kubeconfig of the server to measure against: `real`, else the API emulator started
    in its own process for the while (bench/run.py and bench/shards.py)."""
    if real:
        yield real
        return
    with tempfile.TemporaryDirectory(prefix="gitgate-bench-server-") as scratch:
        kubeconfig = str(Path(scratch) / "kubeconfig")
        emulator = subprocess.Popen([sys.executable, "-c", EMULATOR.format(
            root=str(ROOT), kubeconfig=kubeconfig)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        try:
            assert emulator.stdout is not None and emulator.stdout.readline().strip() == "ready"
            yield kubeconfig
        finally:
            emulator.kill()


def machine() -> str:
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")


def server_of(kubeconfig: str) -> str:
    from gitgate.apiserver.transport import load_client
    from gitgate.apiserver.verbs import KubeCluster
    cluster = KubeCluster(load_client(kubeconfig))
    status, body = cluster.request("GET", "/version")
    version = body.get("gitVersion", "?") if status == 200 else "?"
    return f"kube-apiserver {version} at {cluster.server}"


def summarized_runs(runs: list[dict], key: tuple[str, ...] = ("bundles",)) -> list[dict]:
    """Repeated runs of one configuration (same `key` fields) as one row: the median of every
    number, and for each number that varies, its spread as `min-max` in `<field>_spread`."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault(tuple(run.get(k) for k in key), []).append(run)
    rows = []
    for same in groups.values():
        row = dict(same[0])
        row["runs"] = len(same)
        for field in same[0]:
            values = [r.get(field) for r in same]
            if field in key or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                       for v in values):
                continue
            median = statistics.median(values)
            row[field] = (int(median) if all(isinstance(v, int) for v in values)
                          and median == int(median) else median)
            if len(same) > 1:
                row[f"{field}_spread"] = f"{min(values):.2f}-{max(values):.2f}"
        rows.append(row)
    return rows


def table(runs: list[dict], fields: tuple[str, ...] = FIELDS) -> str:
    def cell(value) -> str:
        if value is None:
            return "-"
        return f"{value:.2f}" if isinstance(value, float) else str(value)
    lines = [" | ".join(fields), " | ".join("---" for _ in fields)]
    lines += [" | ".join(cell(run.get(f)) for f in fields) for run in runs]
    return "\n".join(f"| {line} |" for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,200,1000", help="bundle counts, comma-separated")
    parser.add_argument("--runs", type=int, default=1,
                        help="runs of each size; the table shows medians and spreads")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--fresh-harness", action="store_true",
                        help="on the Karmada harness: start it afresh before the renders and "
                             "before gitgate's turn (needs KARMADA_SRC; KARMADA_HARNESS)")
    parser.add_argument("--turns-only", action="store_true",
                        help="the renders and the two cold apply turns alone")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: one size
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--kubectl", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        from gitgate.cli.run import COLLECTOR_THRESHOLDS

        gc.set_threshold(*COLLECTOR_THRESHOLDS)  # the collector as `gitgate run` sets it
        print(json.dumps(measure(args.one, args.kubeconfig, args.kubectl or None,
                                 not os.environ.get("GITGATE_TEST_KUBECONFIG"),
                                 args.fresh_harness, args.turns_only)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    real = os.environ.get("GITGATE_TEST_KUBECONFIG")
    if args.fresh_harness and not real:
        parser.error("--fresh-harness restarts the Karmada harness: set GITGATE_TEST_KUBECONFIG "
                     "to its karmada.kubeconfig")
    kubectl = find_kubectl(required=bool(real))
    with api_server(real) as kubeconfig:
        server = ("the API emulator (tests/kubeapi, its own process)" if not real
                  else server_of(kubeconfig))
        print(f"machine: {machine()}\nserver: {server}\nkubectl: {kubectl or 'not found'}",
              flush=True)
        runs = []
        for size in (size for size in sizes for _ in range(max(1, args.runs))):
            done = subprocess.run([sys.executable, __file__, "--one", str(size),
                                   "--kubeconfig", kubeconfig, "--kubectl", kubectl or "",
                                   *(["--fresh-harness"] if args.fresh_harness else []),
                                   *(["--turns-only"] if args.turns_only else [])],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                return 1
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"{size} bundles: " + ", ".join(
                f"{k}={table([runs[-1]]).splitlines()[2].split(' | ')[i].strip(' |')}"
                for i, k in enumerate(FIELDS) if i), flush=True)
            if args.json:  # kept run by run: a bench stopped early keeps what it measured
                Path(args.json).write_text(json.dumps({"machine": machine(), "server": server,
                                                       "kubectl": kubectl, "runs": runs},
                                                      indent=2))
    rows = summarized_runs(runs)
    print()
    print(table(rows))
    if args.runs > 1:
        print()
        print(table(rows, ("bundles", "runs", "render_ratio_spread", "cold_apply_s_spread",
                           "kubectl_apply_s_spread", "apply_ratio_spread")))
    if any(run.get("gitgate_turn", {}).get("server") for run in runs):
        print()
        print(table(runs, CPU_FIELDS))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "server": server,
                                               "kubectl": kubectl, "runs": runs,
                                               "medians": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
