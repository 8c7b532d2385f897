"""The reconcile loop in tests: an injected clock, an upstream Git repo it follows, a loop
built over the test cluster, and waiting on a condition."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import git

from gitgate.apply.work import ApplyOptions
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.output.statusviews import loop_document
from gitgate.source.git import GitSource
from tests.conftest import set_identity, write_files

T0 = datetime(2026, 11, 18, 12, tzinfo=UTC)  # a Wednesday


class Clock:
    """An injected clock: it stands still, or moves on by `tick` at each reading (as time
    passes between one command and the next), and `advance` jumps."""

    def __init__(self, now: datetime, tick: timedelta = timedelta(0)):
        self.now, self.tick = now, tick

    def __call__(self) -> datetime:
        self.now += self.tick
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


class Upstream:
    """A bare repo and a working clone that pushes to it."""

    def __init__(self, tmp: Path, kube):
        self.bare = git.Repo.init(tmp / "upstream.git", bare=True, initial_branch="main")
        self.work = git.Repo.init(tmp / "work", initial_branch="main")
        set_identity(self.work, "Dev", "dev@example.com")
        self.work.create_remote("origin", self.bare.working_dir)
        self.root = Path(self.work.working_tree_dir)
        self.ns = kube.ns("loop")
        self.run = kube.run_id
        self.commit({
            "ns/bundle.yaml": f"name: {self.run}-ns\n",
            "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {self.ns}}}\n",
            "app/bundle.yaml": f"name: {self.run}-app\n",
            "app/cm.yaml": self.configmap("one"),
        }, "initial")

    @property
    def url(self) -> str:
        return "file://" + self.bare.working_dir

    def configmap(self, value: str) -> str:
        return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: "
                f"{self.ns}}}\ndata: {{value: {value}}}\n")

    def commit(self, files: dict[str, str], message: str) -> str:
        write_files(self.root, files)
        self.work.git.add("-A")
        self.work.git.commit("-m", message)
        self.work.git.push("origin", "main", "--force")
        return self.work.head.commit.hexsha

    def gate(self, name: str, spec: str) -> dict[str, str]:
        return {f"gates/{name}.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                                      f"metadata: {{name: {name}}}\nspec: {spec}\n"}


def reconciler(upstream, kube, tools, tmp_path, clock=None, cluster=None, interval=60.0,
               **settings_changed):
    """A loop following `upstream`; `settings_changed`: its LoopSettings fields to set."""
    source = GitSource(upstream.url, "main", tmp_path / f"cache-{time.monotonic_ns()}")
    settings = LoopSettings(interval=timedelta(seconds=interval), resync=timedelta(hours=24),
                            backoff_base=timedelta(seconds=0.2),
                            apply=ApplyOptions(now=T0, instance=kube.run_id))
    settings = replace(settings, **settings_changed)
    return Reconciler(source, cluster or kube.cluster, tools, settings, clock=clock)


def wait_for(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def start_run(url: str, kube, cache: Path, listen: str, *flags: str) -> subprocess.Popen:
    """`gitgate run` following `url` into the test cluster as a pod runs it: a pass every
    second, a 4 s Lease, JSON logs; its stdout and stderr piped (text)."""
    return subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "run", "--repo", url, "--kubeconfig",
         kube.kubeconfig, "--instance", kube.run_id, "--interval", "1s", "--cache-dir",
         str(cache), "--listen", listen, "--lease-duration", "4", "--log-format", "json",
         *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def terminate(proc: subprocess.Popen, timeout: float = 30) -> None:
    """A `gitgate run` process asked to stop as Kubernetes asks (SIGTERM); killed if it has
    not ended within `timeout` (its return code then says it did not stop cleanly)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def served_status(loop: Reconciler) -> dict:
    """The loop's `/status` as it would serve it now: what it has, published (as `run` does
    at the end of each turn), rendered."""
    loop.publish()
    return loop_document(loop.published)
