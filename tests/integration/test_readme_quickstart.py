"""The README's quickstart, run as written: its shell blocks go to bash line by line, with the
real `gitgate` CLI in a subprocess and the API emulator standing in for the harness's Karmada
(`KARMADA` names the emulator's kubeconfig). The one command that reads a member cluster
(`kubectl --kubeconfig …member2…`) has no member to read here: what member2 receives is read
from the ConfigMap's binding on the emulator instead."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.integration

MARK = "@@quickstart-step "


def quickstart_blocks() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    start = text.index("\n## Quickstart")
    end = text.index("\n## ", start + 1)
    blocks = re.findall(r"```sh\n(.*?)```", text[start:end], re.S)
    assert len(blocks) == 2, "the quickstart has its two shell blocks"
    return blocks


def commands(block: str) -> list[str]:
    """The block's commands, a here-document kept whole with the command that opens it."""
    out: list[str] = []
    lines = iter(block.splitlines())
    for line in lines:
        if not line.strip():
            continue
        heredoc = re.search(r"<<'(\w+)'", line)
        if heredoc:
            body = [line]
            for more in lines:
                body.append(more)
                if more == heredoc.group(1):
                    break
            line = "\n".join(body)
        out.append(line)
    return out


def as_run_here(command: str, karmada: Path) -> str:
    """The command as the test runs it: `KARMADA` is the emulator, and a member cluster's
    kubectl (no member runs here) is left to the assertions."""
    if command.startswith("export KARMADA="):
        return f"export KARMADA={karmada}"
    if command.startswith("kubectl "):
        assert "member2" in command  # the one member read, checked on the binding below
        return "true"
    return command


def script(karmada: Path) -> tuple[str, list[str]]:
    steps = [c for block in quickstart_blocks() for c in commands(block)]
    lines = ["set -euo pipefail"]
    for number, command in enumerate(steps):
        lines += [f"echo '{MARK}{number}'", f"echo '{MARK}{number}' >&2",
                  as_run_here(command, karmada)]
    return "\n".join(lines) + "\n", steps


def outputs(text: str, steps: list[str]) -> dict[str, str]:
    """Each command's output, by the command's text."""
    parts = re.split(rf"^{re.escape(MARK)}(\d+)$", text, flags=re.M)
    return {steps[int(number)]: body for number, body in zip(parts[1::2], parts[2::2],
                                                                strict=True)}


def environment(tmp_path: Path) -> dict[str, str]:
    """A shell with `gitgate` (this checkout's, in a subprocess) on PATH, a git identity, and
    no KUBECONFIG or instance from the machine running the test."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "gitgate"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gitgate.cli "$@"\n')
    wrapper.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = On Call\n\temail = oncall@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "GITGATE_INSTANCE") and not k.startswith("GIT_")}
    venv_bin = str(Path(sys.executable).parent)
    env.update(HOME=str(home), PYTHONPATH=str(REPO_ROOT),
               PATH=os.pathsep.join([str(bin_dir), venv_bin, env.get("PATH", "")]))
    return env


def test_the_readmes_quickstart_runs_as_written(tmp_path, emulator, tools):
    karmada = emulator.write_kubeconfig(tmp_path / "karmada.kubeconfig")
    text, steps = script(karmada)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(["bash", "-c", text], cwd=work, env=environment(tmp_path),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = outputs(done.stdout, steps)

    plan = next(out for command, out in said.items() if command.startswith("gitgate plan ."))
    assert "apps-hello" in plan and "member1,member2" in plan, plan
    statuses = [out for command, out in said.items() if command.startswith("gitgate status")]
    assert len(statuses) == 2
    first, paused = statuses
    assert re.search(r"apps-hello\s+apply\s.*member1 ✓\s+member2 ✓", first), first
    v1 = re.search(r"revision ([0-9a-f]{40}): ok", next(
        out for command, out in said.items() if command.startswith("gitgate apply"))).group(1)
    assert re.search(rf"member1 ✓\s+member2 ⏸ @{v1[:7]}", paused), paused  # still on v1

    karmada_api = KubeCluster(load_client(str(karmada)))
    template = karmada_api.get("v1", "ConfigMap", "hello", "hello")
    assert template is not None and template["data"] == {"greeting": "hello, v2"}
    bindings = karmada_api.list_objects("work.karmada.io/v1alpha2", "ResourceBinding", "hello")
    configmap = [b for b in bindings if b["spec"]["resource"]["kind"] == "ConfigMap"]
    assert len(configmap) == 1
    assert not configmap[0]["spec"].get("suspension"), configmap[0]["spec"]  # member2 resumed
    assert {c["name"] for c in configmap[0]["spec"]["clusters"]} == {"member1", "member2"}
