"""The `gitgate` command: parse the arguments, run the command, turn errors into one line."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from gitgate.errors import GitgateError
from gitgate.output import console
from gitgate.render.sandbox import stop_all


def wall_clock() -> datetime:
    return datetime.now(UTC)


def main(argv: list[str] | None = None, *,
         clock: Callable[[], datetime] = wall_clock) -> int:
    """Run one command. `clock` is what every command takes for "now" (tests pass their
    own, so that a rollout's bake or a freeze's expiry needs no waiting)."""
    from gitgate.cli.parser import build_parser

    parser = build_parser()
    if argv is None:
        import argcomplete  # completes when the shell asks (_ARGCOMPLETE set), else returns

        argcomplete.autocomplete(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error is 2, but `plan --exit-code` says changes so
        words = argv if argv is not None else sys.argv[1:]
        if exc.code == 2 and "--exit-code" in words:
            return 1
        raise
    args.now = clock
    _stop_tools_on_sigterm()
    try:
        return int(args.func(args))
    except GitgateError as exc:
        console.error(exc)
        return 2
    except KeyboardInterrupt:
        stop_all()  # the tools run in sessions of their own: Ctrl-C never reached them
        return 130


def _stop_tools_on_sigterm() -> None:
    """SIGTERM ends any command with the helm and kustomize it started (they run in their own
    sessions, so a signal to gitgate's group would not reach them); `run` installs its own
    graceful handler later."""
    if threading.current_thread() is not threading.main_thread():
        return

    def terminate(signum: int, frame: object) -> None:
        stop_all()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
