"""Issue 61, item 5: the conventions people expect of a CLI that talks to a cluster, with the
real CLI in subprocesses against the API emulator: `$KUBECONFIG` and `$GITGATE_INSTANCE`
read by every such command, `plan --exit-code` (0 / 2 changes / 1 error, as `kubectl
diff`), `gitgate delete` and `gitgate uninstall` (dry run, the mass-prune brake, objects,
records, Lease and ConfigMaps), and `reconcile --wait` that fails at once when the Lease says
nobody leads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import REPO_ROOT, write_files
from tests.support.hostile import LIMITS
from tests.support.shoprepo import shop_repo

pytestmark = pytest.mark.integration

SYSTEM = "gitgate-system"


def kube_env(kubeconfig: str | None = None, **more: str) -> dict[str, str]:
    """The environment with only what the case gives: no KUBECONFIG unless asked."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GITGATE_INSTANCE")}
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    env.update(more)
    return env


def run(*argv: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """The real CLI with exactly `env` (os.environ would leak the suite's KUBECONFIG)."""
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO_ROOT, env={**env, **LIMITS})


def names(kube) -> tuple[str, str, str]:
    """The run's namespace and bundle names (a real API server keeps other runs' objects)."""
    return kube.ns("shop"), f"{kube.run_id}-app", f"{kube.run_id}-extra"


def shop(kube, root):
    ns, app, _ = names(kube)
    return shop_repo(root, ns, app)


def two_bundles(kube, root):
    ns, _, extra = names(kube)
    shop(kube, root)
    return write_files(root, {
        "extra/bundle.yaml": f"name: {extra}\n",
        "extra/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: "
                        f"{ns}}}\ndata: {{k: v}}\n",
        "extra/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: "
                        f"{ns}}}\ndata: {{k: v}}\n"})


def lease(name: str, holder: str | None, renewed: datetime, seconds: int = 15,
          labels: dict[str, str] | None = None) -> dict:
    spec = {"leaseDurationSeconds": seconds,
            "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    if holder:
        spec["holderIdentity"] = holder
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": SYSTEM, "labels": labels or {}},
            "spec": spec}


# ------------------------------------------------------------------ $KUBECONFIG, instance
def test_kubeconfig_and_instance_from_the_environment(kube, tmp_path):
    """`reconcile BUNDLE` went to the webhook path (and refused BUNDLE) with $KUBECONFIG set;
    no command read $GITGATE_INSTANCE."""
    _, app, _ = names(kube)
    root = shop(kube, tmp_path / "repo")
    applied = run("apply", str(root), "--instance", kube.run_id,
                  env=kube_env(kube.kubeconfig))
    assert applied.returncode == 0, applied.stderr
    env = kube_env(kube.kubeconfig, GITGATE_INSTANCE=kube.run_id)
    status = run("status", "-o", "json", env=env)
    assert status.returncode == 0, status.stderr
    assert [b["name"] for b in json.loads(status.stdout)["bundles"]] == [app]
    asked = run("reconcile", app, env=env)
    assert asked.returncode == 0, asked.stderr
    assert "reconcile requested for 1 bundle(s)" in asked.stdout
    record = [o for o in kube.cluster.list_objects("gitgate.io/v1alpha1", "Bundle", SYSTEM)
              if (o["metadata"].get("labels") or {}).get("gitgate.io/instance") == kube.run_id]
    assert any("gitgate.io/reconcile-requested-at" in (o["metadata"].get("annotations") or {})
               for o in record)


def test_plan_exit_code_says_changes_as_kubectl_diff(kube, tmp_path):
    ns, _, _ = names(kube)
    root = shop(kube, tmp_path / "repo")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    before = run("plan", str(root), *flags, "--exit-code", env=kube_env())
    assert before.returncode == 2, before.stderr  # everything would be created
    assert run("apply", str(root), *flags, env=kube_env()).returncode == 0
    after = run("plan", str(root), *flags, "--exit-code", env=kube_env())
    assert after.returncode == 0, after.stderr + after.stdout
    # --exit-code reads $KUBECONFIG (it asks about the cluster); plan alone stays offline
    from_env = run("plan", str(root), "--instance", kube.run_id, "--exit-code",
                   env=kube_env(kube.kubeconfig))
    assert from_env.returncode == 0, from_env.stderr
    write_files(root, {"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "
                                      f"settings, namespace: {ns}}}\ndata: {{mode: two}}\n"})
    changed = run("plan", str(root), *flags, "--exit-code", env=kube_env())
    assert changed.returncode == 2
    assert "configured" in changed.stdout
    # errors are 1, never 2 (which says "changes"): no cluster, a bad kubeconfig, a bad flag
    for argv in ((str(root), "--exit-code"),
                 (str(root), "--exit-code", "--kubeconfig", str(tmp_path / "none")),
                 (str(root), "--exit-code", "--no-such-flag")):
        failed = run("plan", *argv, env=kube_env())
        assert failed.returncode == 1, (argv, failed.stderr)
        assert failed.stderr.startswith(("error: ", "usage: "))


# ------------------------------------------------------------------ delete, uninstall
def test_delete_a_bundle_dry_run_brake_and_for_real(kube, tmp_path):
    ns, app, extra = names(kube)
    root = two_bundles(kube, tmp_path / "repo")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert run("apply", str(root), *flags, env=kube_env()).returncode == 0
    assert kube.cluster.get("v1", "ConfigMap", ns, "a") is not None

    dry = run("delete", extra, *flags, "--dry-run", env=kube_env())
    assert dry.returncode == 0, dry.stderr
    assert f"would delete ConfigMap {ns}/a ({extra})" in dry.stdout
    assert f"would delete the record of {extra}" in dry.stdout
    assert kube.cluster.get("v1", "ConfigMap", ns, "a") is not None

    # every object of the instance but one bundle's would go: apply's brake holds
    everything = run("delete", "*", *flags, env=kube_env())
    assert everything.returncode == 1
    assert "nothing was deleted" in everything.stderr and "--allow-mass-prune" in everything.stderr
    assert kube.cluster.get("v1", "ConfigMap", ns, "settings") is not None

    done = run("delete", extra, *flags, env=kube_env())
    assert done.returncode == 0, done.stderr
    assert f"deleted ConfigMap {ns}/a ({extra})" in done.stdout
    assert kube.cluster.get("v1", "ConfigMap", ns, "a") is None
    assert kube.cluster.get("v1", "ConfigMap", ns, "b") is None
    status = json.loads(run("status", *flags, "-o", "json", env=kube_env()).stdout)
    assert [b["name"] for b in status["bundles"]] == [app]
    typo = run("delete", app[:-1], *flags, env=kube_env())  # the closest name, no label
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr.startswith("error: ") and app in typo.stderr
    assert "[InvalidConfig]" not in typo.stderr


def test_uninstall_an_instance(kube, tmp_path):
    ns, _, _ = names(kube)
    root = shop(kube, tmp_path / "repo")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert run("apply", str(root), *flags, env=kube_env()).returncode == 0
    labels = {"gitgate.io/instance": kube.run_id}
    kube.cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": f"gitgate.{kube.run_id}.overview", "namespace": SYSTEM, "labels": labels},
        "data": {"overview": "{}"}})
    now = datetime.now(UTC)
    kube.cluster.apply(lease(f"gitgate-{kube.run_id}", "replica-a", now))

    leading = run("uninstall", *flags, env=kube_env())
    assert leading.returncode == 2 and "leads instance" in leading.stderr
    assert "stop it first" in leading.stderr

    kube.cluster.apply(lease(f"gitgate-{kube.run_id}", None, now - timedelta(hours=1)))
    dry = run("uninstall", *flags, "--dry-run", "--allow-mass-prune", env=kube_env())
    assert dry.returncode == 0, dry.stderr
    assert f"would delete Lease {SYSTEM}/gitgate-{kube.run_id}" in dry.stdout
    assert f"would delete ConfigMap {SYSTEM}/gitgate.{kube.run_id}.overview" in dry.stdout
    braked = run("uninstall", *flags, env=kube_env())
    assert braked.returncode == 1 and "--allow-mass-prune" in braked.stderr
    assert kube.cluster.get("v1", "ConfigMap", ns, "settings") is not None

    done = run("uninstall", *flags, "--allow-mass-prune", env=kube_env())
    assert done.returncode == 0, done.stderr
    assert kube.cluster.get("v1", "ConfigMap", ns, "settings") is None
    assert kube.cluster.get("v1", "Service", ns, "web") is None
    assert kube.cluster.get("coordination.k8s.io/v1", "Lease", SYSTEM,
                            f"gitgate-{kube.run_id}") is None
    assert kube.cluster.get("v1", "ConfigMap", SYSTEM, f"gitgate.{kube.run_id}.overview") is None
    status = run("status", *flags, "-o", "json", env=kube_env())
    assert json.loads(status.stdout)["bundles"] == []


# ------------------------------------------------------------------ reconcile --wait
def test_reconcile_wait_fails_fast_when_the_lease_says_nobody_leads(kube, tmp_path):
    root = shop(kube, tmp_path / "repo")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert run("apply", str(root), *flags, env=kube_env()).returncode == 0
    kube.cluster.apply(lease(f"gitgate-{kube.run_id}", "replica-a",
                             datetime.now(UTC) - timedelta(minutes=10)))
    started = time.monotonic()
    waited = run("reconcile", *flags, "--wait", "--timeout", "2m", env=kube_env())
    assert waited.returncode == 1
    assert time.monotonic() - started < 30, "waited for a loop the Lease says is not there"
    assert f"no `gitgate run` leads instance {kube.run_id}" in waited.stdout
    assert f"Lease gitgate-{kube.run_id} of replica-a ran out" in waited.stdout
