"""bench/run.py's `--fresh-harness`: the harness is stopped and started again in the same
STATE folder, with the scripts the harness ships (here stand-ins that record their calls)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from bench.run import restart_harness


def script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_the_harness_is_stopped_then_started_in_the_folder_of_the_kubeconfig(tmp_path, monkeypatch):
    scripts, state, calls = tmp_path / "harness", tmp_path / "state", tmp_path / "calls"
    scripts.mkdir()
    state.mkdir()
    script(scripts / "down.sh", f'echo "down $1" >> {calls}\n')
    script(scripts / "up.sh", f'echo "up $STATE $KARMADA_SRC" >> {calls}\n')
    monkeypatch.setenv("KARMADA_HARNESS", str(scripts))
    monkeypatch.setenv("KARMADA_SRC", "/src/karmada")
    restart_harness(str(state / "karmada.kubeconfig"))
    assert calls.read_text().splitlines() == [f"down {state}", f"up {state} /src/karmada"]


def test_a_harness_that_does_not_start_again_stops_the_bench_with_its_error(tmp_path, monkeypatch):
    scripts = tmp_path / "harness"
    scripts.mkdir()
    script(scripts / "down.sh", "exit 0\n")
    script(scripts / "up.sh", 'echo "member clusters did not become Ready" >&2; exit 1\n')
    monkeypatch.setenv("KARMADA_HARNESS", str(scripts))
    monkeypatch.setenv("KARMADA_SRC", "/src/karmada")
    with pytest.raises(SystemExit, match="did not start again: member clusters did not"):
        restart_harness(str(tmp_path / "karmada.kubeconfig"))


def test_without_the_karmada_tree_the_bench_says_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv("KARMADA_SRC", raising=False)
    monkeypatch.setenv("KARMADA_HARNESS", str(tmp_path))
    with pytest.raises(SystemExit, match="KARMADA_SRC"):
        restart_harness(str(tmp_path / "karmada.kubeconfig"))
