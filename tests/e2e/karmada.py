"""What the end-to-end tests drive and watch: a real Karmada control plane with two member
clusters (../shared/karmada-harness), a Git repo the test commits to, and the gitgate CLI in a
subprocess, exactly as a pipeline or the pod runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.karmada.policy import policy_name
from tests.support.kubetarget import KubeTarget, RecordingKube

MEMBERS = ("member1", "member2")
PLACEMENT = ("defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n")


def state_dir() -> Path | None:
    value = os.environ.get("GITGATE_E2E_KARMADA")
    return Path(value) if value else None


def wait_for(what: Callable[[], Any], timeout: float = 60.0, every: float = 0.5,
             message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {message or what}")
        time.sleep(every)


def stays(what: Callable[[], bool], seconds: float, every: float = 1.0) -> list[str]:
    """Sample `what` for `seconds`; returns a line per sample where it did not hold."""
    misses = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not what():
            misses.append(f"t={seconds - (deadline - time.monotonic()):.1f}s")
        time.sleep(every)
    return misses


@dataclass
class Karmada:
    """The harness's three API servers, through gitgate's own Kubernetes adapter."""

    state: Path
    api: KubeCluster = field(init=False)
    members: dict[str, KubeCluster] = field(init=False)

    def __post_init__(self) -> None:
        self.api = KubeCluster(load_client(str(self.kubeconfig)))
        self.members = {m: KubeCluster(load_client(str(self.state / f"{m}.kubeconfig")))
                        for m in MEMBERS}

    @property
    def kubeconfig(self) -> Path:
        return self.state / "karmada.kubeconfig"

    def image(self, where: str, namespace: str, name: str) -> str | None:
        cluster = self.api if where == "karmada" else self.members[where]
        live = cluster.get("apps/v1", "Deployment", namespace, name)
        if live is None:
            return None
        return live["spec"]["template"]["spec"]["containers"][0]["image"]

    def configmap(self, where: str, namespace: str, name: str) -> dict | None:
        cluster = self.api if where == "karmada" else self.members[where]
        live = cluster.get("v1", "ConfigMap", namespace, name)
        return None if live is None else (live.get("data") or {})

    def make_healthy(self, member: str, namespace: str, name: str) -> int:
        """Write a member's Deployment status as its controllers would (the harness's members
        run none); returns the generation it now reports as observed."""
        cluster = self.members[member]
        live = cluster.get("apps/v1", "Deployment", namespace, name)
        assert live is not None, f"no Deployment {namespace}/{name} on {member}"
        generation = live["metadata"]["generation"]
        replicas = live["spec"].get("replicas", 1)
        path = cluster.path_for("apps/v1", "Deployment", namespace, name) + "/status"
        status, body = cluster.request("PATCH", path, body={"status": {
            "observedGeneration": generation, "replicas": replicas,
            "updatedReplicas": replicas, "readyReplicas": replicas,
            "availableReplicas": replicas}}, content_type="application/merge-patch+json")
        assert status == 200, body
        return generation

    def binding_suspension(self, namespace: str, kind: str, name: str) -> Any:
        binding = self.api.get("work.karmada.io/v1alpha2", "ResourceBinding", namespace,
                               f"{name}-{kind}".lower())
        return None if binding is None else (binding.get("spec") or {}).get("suspension")


def gate(name: str, bundle: str, action: str = "suspend", clusters: str | None = None) -> str:
    where = f", clusters: [{clusters}]" if clusters else ""
    return textwrap.dedent(f"""\
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: {name}}}
        spec: {{bundles: ["{bundle}"], action: {action}, reason: "e2e {name}"{where}}}
        """)


class GitRepo:
    """A gitgate repo the test commits to; gitgate reads it as a pipeline's checkout would."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "e2e@gitgate.test")
        self.git("config", "user.name", "gitgate e2e")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.root), *args], check=True, text=True,
                              capture_output=True).stdout

    def commit(self, files: dict[str, str | None], message: str) -> str:
        for rel, text in files.items():
            path = self.root / rel
            if text is None:
                if path.is_dir():
                    self.git("rm", "-r", "-q", rel)
                else:
                    self.git("rm", "-q", rel)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            self.git("add", rel)
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def gitgate(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *args], text=True,
                          capture_output=True, timeout=timeout)


@dataclass
class Run:
    """One test's names (unique to the run) and its repo. Names and cleanup on the Karmada API
    are the integration suite's (`KubeTarget`); the members are cleaned here."""

    karmada: Karmada
    run_id: str
    repo: GitRepo
    target: KubeTarget = field(init=False)

    def __post_init__(self) -> None:
        kubeconfig = str(self.karmada.kubeconfig)
        self.target = KubeTarget(RecordingKube(load_client(kubeconfig)), None, self.run_id,
                                 kubeconfig)

    def ns(self, name: str) -> str:
        return self.target.ns(name)

    def bundle(self, name: str) -> str:
        return f"{self.run_id}-{name}"

    def policy(self, name: str) -> str:
        """The name of a bundle's generated policies (the run is its own instance)."""
        return policy_name(self.bundle(name), self.run_id)

    def apply(self, *extra: str) -> dict:
        """`gitgate apply` once; the pass document, after checking the command succeeded."""
        done = gitgate("apply", str(self.repo.root), "--kubeconfig", str(self.karmada.kubeconfig),
                       "--instance", self.run_id, "-o", "json", *extra)
        assert done.returncode == 0, f"gitgate apply failed:\n{done.stdout}\n{done.stderr}"
        return json.loads(done.stdout)

    def status(self) -> dict:
        """`gitgate status -o json` for this run's bundles."""
        done = gitgate("status", "--kubeconfig", str(self.karmada.kubeconfig), "--instance",
                       self.run_id, "-o", "json")
        assert done.returncode == 0, f"gitgate status failed:\n{done.stdout}\n{done.stderr}"
        return json.loads(done.stdout)

    def clusters(self, bundle: str) -> dict[str, dict]:
        """Per member cluster, what `status -o json` says of the bundle."""
        found = self.result(self.status(), bundle)
        return {c["name"]: c for c in found["clusters"]}

    def result(self, document: dict, bundle: str) -> dict:
        return next(b for b in document["bundles"] if b["name"] == self.bundle(bundle))

    def start_loop(self, cache: Path, *extra: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "gitgate.cli", "run", "--repo", str(self.repo.root),
             "--kubeconfig", str(self.karmada.kubeconfig), "--instance", self.run_id,
             "--interval", "1s", "--cache-dir", str(cache), "--listen", "127.0.0.1:0",
             "--no-leader-elect", "--log-format", "json", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def stop_loop(proc: subprocess.Popen) -> str:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        return proc.stderr.read() if proc.stderr else ""

    def cleanup(self) -> None:
        """The run's policies, namespaces and inventories on Karmada (Karmada removes the
        namespaces from the members too; deleting them there as well makes sure)."""
        self.target.cleanup()
        for namespace in self.target.namespaces:
            for member in self.karmada.members.values():
                member.delete("v1", "Namespace", "", namespace)
