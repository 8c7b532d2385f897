"""A freeze pushed while `gitgate run` is writing (issue 59): how soon the writes it covers
stop, and that the others go on (`make bench-freeze`).

    .venv/bin/python bench/freeze_mid_pass.py [--sizes 1000,5000] [--runs 3]
        [--runs-large 3] [--large 5000] [--scenarios webhook-all,webhook-half,poll-all]
        [--at configmaps] [--share 0.2] [--json FILE] [--logs DIR]

Per run: a fresh API emulator (tests/kubeapi, in its own process, its request log stamped
with time.monotonic()), a bare Git remote on disk holding N raw bundles of 10 ConfigMaps each
(100 bundles per namespace, every bundle depending on a namespaces bundle), and
`gitgate run --repo file://<remote> --interval 1h --no-leader-elect` (a subprocess running
this tree's code) doing its cold pass. Once `--share` of the ConfigMaps are written, a commit
adding a `hold` gate is pushed to the remote; the push's end is the reference time (`--at
policies` or `--at records`: once that share of the bundles' PropagationPolicies, or of the
write-ahead records gitgate writes before any object, are written). Scenarios:

- webhook-all: the gate covers `*`; the signed webhook (`POST /hooks/git`) is sent at once
  after the push;
- webhook-half: the gate covers `b*[02468]` (half the bundles, spread over the whole pass);
  webhook as above;
- poll-all: the gate covers `*`; no webhook: the loop's look at the remote's head while a
  pass writes (`freeze_check`, every second) alone.

The run ends once the loop's passes are over (with the webhook the loop runs a second pass
for the new commit, which holds the covered bundles: its writes are counted too) and the
emulator has had no write for 3 s. From the emulator's request log (writes: POST, PUT, PATCH,
DELETE, not dry runs; a bundle's objects are its ConfigMaps and its PropagationPolicy
`gitgate-<bundle>`; gitgate's own records are not counted):

- last_covered_s: seconds from the push to the last write of an object the gate covers
  (negative: none after the push; none: no covered object was written at all);
- covered_late: covered objects written more than LATE_S seconds after the push (target 0);
- covered_after: covered objects written after the push at all (writes in flight, and those
  sent before the pass learned of the commit);
- uncovered_after: objects the gate does not cover written after the push (the pass goes on
  with them); uncovered_missing: uncovered ConfigMaps never written by the end (target 0);
- written_at_push: ConfigMaps written before the push; push_at_s: seconds from starting
  gitgate to the push; first_write_s: from starting gitgate to its first ConfigMap write;
- newer_head_s: from the push to the loop's log line saying it read the newer commit
  (`newer-head`; the log's wall-clock time against the wall clock at the push);
- covered_after_newer: covered objects the emulator got after that line (requests in
  flight when the loop read the commit, or queued in the emulator, which stamps a request
  when it begins to handle it);
- the JSON also has, per run, the writes after the push by resource, covered or not
  (writes_after_by_kind), and the late covered ones by resource (covered_late_by_kind).
- pass_s: the cold pass's duration (its `pass` log line).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import PER_NAMESPACE, machine, repo_base, summarized_runs, table  # noqa: E402
from bench.shards import free_port, git, terminate, wait  # noqa: E402

SECRET = "bench-freeze-webhook-secret"
LATE_S = 2.0  # a covered write later than this after the push misses the target
CONFIGMAPS = 10  # per bundle
QUIET_S = 3.0  # the run ends once the emulator has had no write for this long
SCENARIOS = {  # name: (the gate's bundle globs, whether the webhook is sent)
    "webhook-all": (["*"], True),
    "webhook-half": (["b*[02468]"], True),
    "poll-all": (["*"], False),
}
# where in the cold pass the push comes: once `--share` of these objects are written (the
# resource they are of, and how many the pass writes)
PHASES = {
    "configmaps": ("configmaps", lambda bundles: bundles * CONFIGMAPS),  # the templates
    "policies": ("propagationpolicies", lambda bundles: bundles),  # each bundle's own policy
    "records": ("bundles", lambda bundles: bundles + 1),  # the write-ahead records
}
FIELDS = ("bundles", "scenario", "at", "runs", "last_covered_s", "covered_late", "covered_after",
          "covered_after_newer", "uncovered_after", "uncovered_missing", "written_at_push",
          "push_at_s", "first_write_s", "newer_head_s", "pass_s")
_BUNDLE = re.compile(r"^(?:gitgate-)?(b\d{4,})(?:[-.]|$)")


# ------------------------------------------------------------------ the emulator's side
def serve_emulator(kubeconfig: str) -> None:
    """The emulator's process: serves until its stdin closes, answering one line per line:
    `written PLURAL` (how many objects of that resource were written so far, and all writes
    so far), `dump FILE` (every write so far as [at, method, path], to FILE)."""
    from tests.kubeapi.server import KubeApiEmulator
    with KubeApiEmulator() as api:
        api.write_kubeconfig(Path(kubeconfig))
        print("ready", flush=True)
        seen, writes = 0, 0
        written: dict[str, set[str]] = {}  # per resource (plural), the objects written
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            requests = api.state.requests[seen:]  # appended only: a copy of what came since
            seen += len(requests)
            for request in requests:
                if request.is_write:
                    writes += 1
                    parts = request.path.rstrip("/").split("/")
                    written.setdefault(parts[-2], set()).add(request.path)
            if command == "written":
                print(len(written.get(argument, ())), writes, flush=True)
            elif command == "dump":
                Path(argument).write_text(json.dumps(
                    [[r.at, r.method, r.path] for r in api.state.requests[:seen] if r.is_write]))
                print("dumped", flush=True)


class Emulator:
    """The emulator's process, seen from the benchmark."""

    def __init__(self, scratch: Path) -> None:
        self.kubeconfig = str(scratch / "kubeconfig")
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve-emulator",
             self.kubeconfig], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        if self._line() != "ready":
            raise SystemExit("the API emulator did not start")

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def ask(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._line()

    def written(self, plural: str) -> tuple[int, int]:
        """How many objects of `plural` were written so far, and all writes so far."""
        objects, writes = self.ask(f"written {plural}").split()
        return int(objects), int(writes)

    def writes(self, scratch: Path) -> list[tuple[float, str, str]]:
        path = scratch / "writes.json"
        if self.ask(f"dump {path}") != "dumped":
            raise SystemExit("the API emulator did not write its request log")
        return [(float(at), method, p) for at, method, p in json.loads(path.read_text())]

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # it leaves its loop and shuts the server down
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


# ------------------------------------------------------------------------------ the repo
def write_bundles(root: Path, bundles: int, prefix: str) -> int:
    """N raw bundles of CONFIGMAPS ConfigMaps each, PER_NAMESPACE to a namespace, each
    depending on the bundle of the namespaces. Returns the ConfigMaps in all."""
    namespaces, files = repo_base(bundles, prefix)
    for i in range(bundles):
        name = f"b{i:04d}"
        files[f"apps/{name}/bundle.yaml"] = (f"name: {name}\nnamespace: "
                                             f"{namespaces[i // PER_NAMESPACE]}\n"
                                             "dependsOn: [namespaces]\n")
        files[f"apps/{name}/configmaps.yaml"] = "".join(
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}-cm-{k}}}\n"
            f"data: {{index: \"{k}\", value: one}}\n" for k in range(CONFIGMAPS))
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return bundles * CONFIGMAPS


def commit(work: Path, message: str) -> None:
    git(work, "-c", "user.name=bench", "-c", "user.email=b@b", "add", "-A")
    git(work, "-c", "user.name=bench", "-c", "user.email=b@b", "commit", "-qm", message)


def gate_file(work: Path, globs: list[str]) -> None:
    path = work / "gates/freeze.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
                    f"spec: {{bundles: {json.dumps(globs)}, action: hold, "
                    "reason: bench freeze mid-pass}\n")


# ------------------------------------------------------------------------------ gitgate
def child_env() -> dict[str, str]:
    """The environment of `gitgate run`: this tree's code first."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}


def check_code_under_test() -> str:
    """The gitgate package `gitgate run` imports: this tree's (else the figures would be of
    another tree's code)."""
    where = subprocess.run([sys.executable, "-c", "import gitgate; print(gitgate.__file__)"],
                           cwd=ROOT, env=child_env(), check=True, capture_output=True,
                           text=True).stdout.strip()
    if not Path(where).resolve().is_relative_to(ROOT):
        raise SystemExit(f"gitgate run would import {where}, not this tree's code")
    return where


def webhook(port: int) -> None:
    body = json.dumps({"ref": "refs/heads/main"}).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/hooks/git", data=body, method="POST",
        headers={"Content-Type": "application/json", "X-GitHub-Event": "push",
                 "X-Hub-Signature-256": f"sha256={signature}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        if answer.status != 202:
            raise SystemExit(f"the webhook was answered {answer.status}")


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM (gitgate's shutdown), then SIGKILL; and any process left in its group."""
    terminate(process)
    for pid in left_in_group(process.pid):
        os.kill(pid, 9)


def left_in_group(group: int) -> list[int]:
    """Processes still in the process group `group` (one of ours: started in a session of
    its own)."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:
            left.append(int(entry.name))
    return left


@contextmanager
def gitgate_run(remote: Path, kubeconfig: str, port: int, scratch: Path
                ) -> Iterator[subprocess.Popen]:
    (scratch / "secret").write_text(SECRET)
    log = (scratch / "gitgate.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "run", "--repo", f"file://{remote}",
         "--kubeconfig", kubeconfig, "--instance", "freeze", "--interval", "1h",
         "--status-interval", "1h", "--resync", "1h", "--no-leader-elect",
         "--listen", f"127.0.0.1:{port}", "--webhook-secret-file", str(scratch / "secret"),
         "--cache-dir", str(scratch / "cache"), "--log-format", "json"],
        cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL, stderr=log,
        start_new_session=True)
    try:
        yield process
    finally:
        stop_process(process)
        log.close()


def logged(log: Path, event: str) -> list[dict]:
    """The lines of gitgate's JSON log for `event`."""
    found = []
    for line in log.read_text().splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if doc.get("event") == event:
            found.append(doc)
    return found


# ------------------------------------------------------------------------------ one run
@dataclass(frozen=True)
class Push:
    at: float  # time.monotonic() once `git push` returned
    wall: float  # time.time() then
    took: float  # the push's own seconds


def owner(path: str) -> tuple[str, str] | None:
    """(bundle, kind) of a write's path when it is a bundle's object: its ConfigMaps and
    its PropagationPolicy; None for anything else (records, namespaces, leases)."""
    parts = path.strip("/").split("/")
    if "gitgate.io" in parts or "namespaces" not in parts or len(parts) < 6:
        return None
    found = _BUNDLE.match(parts[-1])
    return (found.group(1), parts[-2]) if found else None


def figures(writes: list[tuple[float, str, str]], push: Push, covered: set[str],
            bundles: int, started: float, newer: float | None) -> dict:
    """What the request log says about the writes around the push (`newer`: seconds from
    the push to the loop's reading of the new commit)."""
    names = {f"b{i:04d}" for i in range(bundles)}
    last_covered, late, after_covered, after_uncovered = None, set(), set(), set()
    after_newer: set[str] = set()  # covered objects the emulator got after the loop read it
    late_kinds: dict[str, int] = {}
    after_kinds: dict[str, dict[str, int]] = {"covered": {}, "uncovered": {}}
    configmaps_written: set[str] = set()
    written_at_push = 0
    first_write = None
    for at, _method, path in sorted(writes):
        found = owner(path)
        if found is None:
            continue
        bundle, kind = found
        if kind == "configmaps":
            first_write = at if first_write is None else first_write
            if path not in configmaps_written:
                configmaps_written.add(path)
                written_at_push += at <= push.at
        since = at - push.at
        if since > 0:
            kinds = after_kinds["covered" if bundle in covered else "uncovered"]
            kinds[kind] = kinds.get(kind, 0) + 1
        if bundle in covered:
            last_covered = since
            if since > 0:
                after_covered.add(path)
            if newer is not None and since > newer:
                after_newer.add(path)
            if since > LATE_S and path not in late:
                late.add(path)
                late_kinds[kind] = late_kinds.get(kind, 0) + 1
        elif since > 0:
            after_uncovered.add(path)
    missing = CONFIGMAPS * len(names - covered) - sum(
        1 for path in configmaps_written if (found := owner(path)) and found[0] not in covered)
    return {"last_covered_s": None if last_covered is None else round(last_covered, 3),
            "covered_late": len(late), "covered_late_by_kind": late_kinds,
            "covered_after": len(after_covered), "uncovered_after": len(after_uncovered),
            "writes_after_by_kind": after_kinds, "covered_after_newer": len(after_newer),
            "newer_head_s": newer,
            "uncovered_missing": missing, "written_at_push": written_at_push,
            "push_at_s": round(push.at - started, 2), "push_took_s": round(push.took, 3),
            "first_write_s": None if first_write is None else round(first_write - started, 2)}


def newer_head_s(log: Path, push: Push) -> float | None:
    """From the push to the loop's first `newer-head` line (wall clock against wall clock)."""
    for doc in logged(log, "newer-head"):
        return round(datetime.fromisoformat(doc["time"]).timestamp() - push.wall, 3)
    return None


def measure(bundles: int, scenario: str, at: str, share: float, logs: Path | None) -> dict:
    globs, hook = SCENARIOS[scenario]
    plural, total = PHASES[at][0], PHASES[at][1](bundles)
    with tempfile.TemporaryDirectory(prefix="gitgate-bench-freeze-") as scratch_name:
        scratch = Path(scratch_name)
        remote, work = scratch / "remote.git", scratch / "work"
        git(scratch, "init", "-q", "--bare", "-b", "main", str(remote))
        write_bundles(work, bundles, "fz")
        git(scratch, "init", "-q", "-b", "main", str(work))
        commit(work, "bundles")
        git(work, "remote", "add", "origin", str(remote))
        git(work, "push", "-q", "origin", "main")
        gate_file(work, globs)
        commit(work, "freeze")  # pushed mid-pass
        covered = {f"b{i:04d}" for i in range(bundles)
                   if any(fnmatch.fnmatchcase(f"b{i:04d}", glob) for glob in globs)}
        emulator = Emulator(scratch)
        try:
            port = free_port()
            started = time.monotonic()
            with gitgate_run(remote, emulator.kubeconfig, port, scratch) as process:
                wait(lambda: process.poll() is None
                     and emulator.written(plural)[0] >= share * total,
                     1800, "the cold pass's first writes", poll=0.05)
                before = time.monotonic()
                git(work, "push", "-q", "origin", "main")
                push = Push(time.monotonic(), time.time(), time.monotonic() - before)
                if hook:
                    webhook(port)
                # the cold pass, and with the webhook the pass of the new commit after it
                log = scratch / "gitgate.log"
                wait(lambda: process.poll() is not None
                     or len(logged(log, "pass")) >= (2 if hook else 1), 1800, "the passes",
                     poll=0.5)
                if process.poll() is not None:
                    raise SystemExit(f"gitgate run exited: see {scratch / 'gitgate.log'}")
                quiet_since, count = time.monotonic(), emulator.written(plural)[1]
                while time.monotonic() - quiet_since < QUIET_S:
                    time.sleep(0.5)
                    now = emulator.written(plural)[1]
                    if now != count:
                        quiet_since, count = time.monotonic(), now
            writes = emulator.writes(scratch)
        finally:
            emulator.stop()
            if logs is not None:
                logs.mkdir(parents=True, exist_ok=True)
                log = scratch / "gitgate.log"
                if log.exists():
                    (logs / f"{bundles}-{scenario}-{at}-{int(time.time())}.log").write_text(
                        log.read_text())
        out = {"bundles": bundles, "scenario": scenario, "at": at,
               "covered_bundles": len(covered),
               **figures(writes, push, covered, bundles, started,
                         newer_head_s(scratch / "gitgate.log", push)),
               "pass_s": round(logged(scratch / "gitgate.log", "pass")[0]["duration"], 2)}
    return out


def medians(runs: list[dict]) -> list[dict]:
    """summarized_runs by size, scenario and push point; a figure some runs have and others
    do not (no covered write at all, no ConfigMap written) is shown run by run, `-` where
    it is missing, as no median of it would be true."""
    key = ("bundles", "scenario", "at")
    rows = summarized_runs(runs, key)
    for row in rows:
        same = [r for r in runs if all(r.get(k) == row.get(k) for k in key)]
        for field in FIELDS:
            values = [r.get(field) for r in same]
            if None in values and any(v is not None for v in values):
                row[field] = "/".join("-" if v is None else f"{v:.2f}" for v in values)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000", help="bundle counts, comma-separated")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="of " + ", ".join(SCENARIOS))
    parser.add_argument("--runs", type=int, default=3, help="runs of each scenario per size")
    parser.add_argument("--large", type=int, default=5000,
                        help="sizes from this one run --runs-large times")
    parser.add_argument("--runs-large", type=int, default=3,
                        help="runs of each scenario at the large sizes")
    parser.add_argument("--at", default="configmaps",
                        help="where the push comes, comma-separated: once --share of these "
                             "are written: " + ", ".join(PHASES))
    parser.add_argument("--share", type=float, default=0.2,
                        help="the share of the objects of --at written before the push")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--logs", type=Path, help="keep gitgate's log of each run here")
    parser.add_argument("--serve-emulator", help=argparse.SUPPRESS)  # the emulator's process
    args = parser.parse_args(argv)
    if args.serve_emulator:
        serve_emulator(args.serve_emulator)
        return 0
    for given, known in ((args.scenarios, SCENARIOS), (args.at, PHASES)):
        unknown = {n.strip() for n in given.split(",") if n.strip()} - set(known)
        if unknown:
            parser.error(f"unknown: {', '.join(sorted(unknown))} (known: {', '.join(known)})")
    code = check_code_under_test()
    print(f"machine: {machine()}\ngitgate: {code}", flush=True)
    runs = []
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        repeat = args.runs_large if size >= args.large else args.runs
        for _ in range(max(1, repeat)):
            for at in (a.strip() for a in args.at.split(",") if a.strip()):
                for scenario in (s.strip() for s in args.scenarios.split(",") if s.strip()):
                    runs.append(measure(size, scenario, at, args.share, args.logs))
                    print(table([{**runs[-1], "runs": 1}], FIELDS).splitlines()[-1],
                          flush=True)
    rows = medians(runs)
    print()
    print(table(rows, FIELDS))
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"machine": machine(), "share": args.share,
                                    "late_s": LATE_S, "runs": runs, "medians": rows},
                                   indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
