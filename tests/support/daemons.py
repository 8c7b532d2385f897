"""The gpg daemons a test leaves behind: gpg starts gpg-agent (and keyboxd, dirmngr) on its
own, detached, and they outlive the process that used the keyring. Each test's environment
carries a mark of its own, which every process it starts inherits, down to those daemons."""

from __future__ import annotations

import contextlib
import gc
import time
from pathlib import Path

import psutil

MARK = "GITGATE_TEST_DAEMON_MARK"
DAEMONS = frozenset({"gpg-agent", "keyboxd", "dirmngr"})


def gpg_daemons(mark: str) -> list[str]:
    """The live gpg daemons whose environment carries `mark` (`pid name --homedir ...`)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() not in DAEMONS:
                continue
            environ = (proc / "environ").read_bytes().split(b"\0")
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # gone, or not ours
            continue
        if f"{MARK}={mark}".encode() in environ:
            found.append(f"{proc.name} {command.strip()}")
    return found


def gpg_daemons_left(mark: str, timeout: float = 10.0) -> list[str]:
    """`gpg_daemons` once those told to stop have had `timeout` seconds to exit."""
    deadline = time.monotonic() + timeout
    left = gpg_daemons(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = gpg_daemons(mark)
    return left


RUN_MARK = "GITGATE_TEST_RUN_MARK"


def processes_left(mark: str, timeout: float = 10.0) -> list[str]:
    """The processes a test run left alive (`pid name cmdline`): this process's descendants,
    and the processes whose environment carries `mark` (a daemon that detached itself from
    its parent still inherited it), once they have had `timeout` seconds to exit."""
    deadline = time.monotonic() + timeout
    left = _left(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        gc.collect()  # an owner let go meanwhile (a thread that ended) takes its helpers along
        left = _left(mark)
    return [_said(proc) for proc in left]


def stop(mark: str) -> None:
    """Ends the processes `processes_left` names (SIGTERM, then SIGKILL after 5 s)."""
    found = _left(mark)
    for proc in found:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(found, timeout=5)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def _left(mark: str) -> list[psutil.Process]:
    me = psutil.Process()
    found = {p.pid: p for p in me.children(recursive=True) if _alive(p)}
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me.pid or proc.pid in found:
            continue
        try:
            if proc.environ().get(RUN_MARK) == mark and _alive(proc):
                found[proc.pid] = proc
        except psutil.Error:  # gone, or not ours to read
            continue
    return sorted(found.values(), key=lambda p: p.pid)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _said(proc: psutil.Process) -> str:
    try:
        return f"{proc.pid} {proc.name()} {' '.join(proc.cmdline())[:200]}"
    except psutil.Error:
        return f"{proc.pid} (gone)"
