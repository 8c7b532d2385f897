"""The one place gitgate's commands write to the terminal: documents and tables to stdout,
warnings and errors to stderr, each error naming where it is and what went wrong."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from gitgate.errors import GitgateError
from gitgate.model import Problem

# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides: a file
# or object name holding one could move the cursor, recolour or hide text, or reorder a line
_HIDDEN = {**{c: f"\\x{c:02x}" for c in [*range(0x20), 0x7f, *range(0x80, 0xa0)]
              if c not in (0x0a, 0x09)},
           **{c: f"\\u{c:04x}" for c in [*range(0x202a, 0x202f), *range(0x2066, 0x206a)]}}
_ONE_LINE = {**_HIDDEN, 0x0a: "\\n", 0x09: "\\t"}


def printable(text: str) -> str:
    """`text` with every terminal control character written as an escape (newlines kept)."""
    return text.translate(_HIDDEN)


def single_line(text: str) -> str:
    """A name for a single-line field (a file, an object): newlines escaped too, so that it
    can never start a line of its own (a forged `ok` in check's output)."""
    return text.translate(_ONE_LINE)


def out(text: str) -> None:
    """Text for stdout; non-empty text ends in a newline."""
    text = printable(text)
    sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")


def out_json(document: Any) -> None:
    out(json.dumps(document, indent=2))


def warn(text: str) -> None:
    print(printable(f"warning: {text}"), file=sys.stderr)


def problem_line(problem: Problem, *, warning: bool = False) -> str:
    """`error: FILE:LINE: [Reason] message` on one line, whatever the file name holds."""
    if warning:
        return f"warning: {single_line(problem.location())}: {single_line(problem.message)}"
    return (f"error: {single_line(problem.location())}: [{problem.reason}] "
            f"{single_line(problem.message)}")


def invalid_gate_line(file: str, line: int | None, message: str) -> str:
    where = f"{file}:{line}" if line else file
    return f"error: {single_line(where)}: [InvalidGate] {single_line(message)} (every bundle " \
        "is held)"


def problems(errors: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
    for warning in warnings:
        print(problem_line(warning, warning=True), file=sys.stderr)
    for problem in errors:
        print(problem_line(problem), file=sys.stderr)


def error(exc: GitgateError) -> None:
    where = f" ({exc.file}{':' + str(exc.line) if exc.line else ''})" if exc.file else ""
    print(f"error: [{exc.reason}] {single_line(exc.message)}{single_line(where)}",
          file=sys.stderr)


def progress(text: str) -> None:
    """A line of progress while a command waits (stderr, so stdout stays a document)."""
    print(printable(text), file=sys.stderr, flush=True)
