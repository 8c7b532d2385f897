"""The `gitgate` command: parse the arguments, run the command, turn errors into one line."""

from __future__ import annotations

from gitgate.errors import GitgateError
from gitgate.output import console


def main(argv: list[str] | None = None) -> int:
    from gitgate.cli.parser import build_parser

    parser = build_parser()
    if argv is None:
        import argcomplete  # completes when the shell asks (_ARGCOMPLETE set), else returns

        argcomplete.autocomplete(parser)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except GitgateError as exc:
        console.error(exc)
        return 2
    except KeyboardInterrupt:
        return 130
