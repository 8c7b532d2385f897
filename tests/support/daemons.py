"""The gpg daemons a test leaves behind: gpg starts gpg-agent (and keyboxd, dirmngr) on its
own, detached, and they outlive the process that used the keyring. Each test's environment
carries a mark of its own, which every process it starts inherits, down to those daemons."""

from __future__ import annotations

import time
from pathlib import Path

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
