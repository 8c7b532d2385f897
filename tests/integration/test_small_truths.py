"""Issue 28, item 11 (in part): small things that told a user nothing, or the wrong thing. The
real CLI, in subprocesses."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, REPO_ROOT

pytestmark = pytest.mark.integration


def gitgate(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT, env=env)


def test_apply_timeout_without_wait_is_an_error_not_ignored(tmp_path):
    done = gitgate("apply", str(EXAMPLES), "--timeout", "1m",
                   "--kubeconfig", str(tmp_path / "absent"))
    assert done.returncode == 2
    assert "--timeout is how long --wait waits: add --wait, or drop --timeout" in done.stderr


def test_status_without_any_kubeconfig_says_what_to_do(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    done = gitgate("status", env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("error: no kubeconfig: --kubeconfig is not given, $KUBECONFIG "
                                  "is not set")
    assert "this is not a pod; pass the kubeconfig of the Karmada API server with "\
        "--kubeconfig FILE" in done.stderr
    assert "Service host/port" not in done.stderr


def test_the_help_quotes_the_globs_it_shows():
    shown = gitgate("--help").stdout
    assert "gitgate pause 'shop/*'" in shown and "gitgate resume 'shop/*'" in shown
    assert " shop/* " not in shown


def test_a_failed_fetch_is_one_log_line_with_gits_reason(tmp_path, kube):
    """The docs promise one line per event; git's multi-line stderr (and GitPython's
    `stderr: '...'` wrapping) made several. And the line says when the fetch is tried again
    (the next interval), not a backoff time the loop does not keep for fetches."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "run", "--repo", f"file://{tmp_path}/none.git",
         "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id, "--no-leader-elect",
         "--interval", "1s", "--cache-dir", str(tmp_path / "cache"), "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    try:
        lines = [proc.stderr.readline() for _ in range(3)]
    finally:
        proc.kill()
        proc.wait(10)
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (INFO|WARNING) ")
    assert all(stamp.match(line) for line in lines), lines
    failed = [line for line in lines if "SourceFailed" in line]
    assert failed and "does not appear to be a git repository" in failed[0]
    assert "stderr:" not in failed[0] and "Cloning into" not in failed[0]
    assert "(tried again at " in failed[0]


def test_a_log_message_of_several_lines_is_one_line():
    from gitgate.output.logs import TextFormatter

    record = logging.LogRecord("gitgate", logging.WARNING, __file__, 1,
                               "fetch failed: %s", ("fatal: one\nfatal: two\n",), None)
    line = TextFormatter().format(record)
    assert "\n" not in line and line.endswith("WARNING fetch failed: fatal: one | fatal: two")


def test_a_terminal_that_cannot_show_the_marks_gets_ascii_not_a_crash(tmp_path, kube):
    """`status` crashed with UnicodeEncodeError on `✓` in a latin-1 or ASCII locale."""
    root = tmp_path / "repo"
    ns = kube.ns("plain")
    (root / "web").mkdir(parents=True)
    (root / "gitgate.yaml").write_text("defaults: {placement: {clusterAffinity: "
                                       "{clusterNames: [member1]}}}\n")
    (root / "web/app.yaml").write_text(
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\napiVersion: v1\n"
        f"kind: ConfigMap\nmetadata: {{name: c, namespace: {ns}}}\n")
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]
    assert gitgate("apply", str(root), *flags).returncode == 0
    for encoding in ("ascii", "latin-1"):
        env = {**os.environ, "PYTHONIOENCODING": encoding}
        shown = gitgate("status", *flags, env=env)
        assert shown.returncode == 0, shown.stderr
        assert "UnicodeEncodeError" not in shown.stderr and "web" in shown.stdout
        shown.stdout.encode(encoding)
        wide = gitgate("status", *flags, "-o", "wide", env=env)
        assert wide.returncode == 0, wide.stderr


def test_status_of_an_instance_with_no_bundles_says_which_instances_have_some(tmp_path, kube):
    root = tmp_path / "repo"
    ns = kube.ns("inst")
    (root / "web").mkdir(parents=True)
    (root / "web/app.yaml").write_text(f"apiVersion: v1\nkind: Namespace\nmetadata: "
                                       f"{{name: {ns}}}\n")
    assert gitgate("apply", str(root), "--kubeconfig", kube.kubeconfig, "--instance",
                   kube.run_id).returncode == 0
    empty = gitgate("status", "--kubeconfig", kube.kubeconfig, "--instance", "nothing-here")
    assert empty.returncode == 0
    assert "no bundle is recorded for --instance nothing-here; instances with bundles " \
        "here: " in empty.stderr and kube.run_id in empty.stderr


def test_the_pinned_tools_in_the_venv_come_before_those_on_path(tmp_path):
    """`.venv/bin/gitgate` run directly found the system kubectl (an older kustomize) first."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, said in (("kubectl", '{"kustomizeVersion": "v5.0.0"}'), ("helm", "v3.14.0")):
        (fake / name).write_text(f"#!/bin/sh\necho '{said}'\n")
        (fake / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITGATE_")}
    env["PATH"] = f"{fake}:{env.get('PATH', '')}"
    pinned = gitgate("version")
    shown = gitgate("version", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "kustomize: v5.0.0" not in shown.stdout and "helm: v3.14.0" not in shown.stdout
    assert shown.stdout == pinned.stdout


def test_plan_says_it_does_not_read_kubeconfig_from_the_environment(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    quiet = gitgate("plan", str(EXAMPLES), env=env)
    assert quiet.returncode == 0 and "KUBECONFIG" not in quiet.stderr
    told = gitgate("plan", str(EXAMPLES), env={**env, "KUBECONFIG": str(tmp_path / "k")})
    assert told.returncode == 0
    assert "plan reads the repo only: $KUBECONFIG is set but not read" in told.stderr
