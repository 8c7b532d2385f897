"""The one place gitgate's commands write to the terminal: documents and tables to stdout,
warnings and errors to stderr, each error naming where it is and what went wrong."""

from __future__ import annotations

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


# what the tables' marks become on a terminal that cannot show them (a latin-1 or ASCII
# locale): one character for one, so that the columns stay aligned
_PLAIN = str.maketrans({"✓": "+", "✗": "x", "⏸": "=", "…": "~", "→": ">", "—": "-", "–": "-",
                        "·": "."})


def fitted(text: str, encoding: str | None) -> str:
    """`text` as the stream can encode it: marks spelled in ASCII, anything else replaced,
    instead of a UnicodeEncodeError halfway through a table."""
    if not encoding:
        return text
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        plain = text.translate(_PLAIN)
        try:
            return plain.encode(encoding, "replace").decode(encoding)
        except LookupError:
            return plain.encode("ascii", "replace").decode("ascii")


def _say(text: str, stream: Any, *, flush: bool = False) -> None:
    stream.write(fitted(text if not text or text.endswith("\n") else text + "\n",
                        getattr(stream, "encoding", None)))
    if flush:
        stream.flush()


def out(text: str) -> None:
    """Text for stdout; non-empty text ends in a newline."""
    _say(printable(text), sys.stdout)


def warn(text: str) -> None:
    _say(printable(f"warning: {text}"), sys.stderr)


def problem_line(problem: Problem, *, warning: bool = False) -> str:
    """`error: FILE:LINE: message` on one line, whatever the file name holds. The reason
    word (`RenderFailed`) is for machines: the documents and `check` carry it, a message
    line says what happened in words."""
    label = "warning" if warning else "error"
    return f"{label}: {single_line(problem.location())}: {single_line(problem.message)}"


def invalid_gate_line(file: str, line: int | None, message: str,
                      within: tuple[str, ...] = ()) -> str:
    where = f"{file}:{line}" if line else file
    held = "every bundle of its tenant is held" if within else "every bundle is held"
    return (f"error: {single_line(where)}: invalid gate: {single_line(message)} ({held} "
            "until it is fixed)")


def problems(errors: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
    for warning in warnings:
        _say(problem_line(warning, warning=True), sys.stderr)
    for problem in errors:
        _say(problem_line(problem), sys.stderr)


def error(exc: GitgateError) -> None:
    """`error: FILE:LINE: message` (`error: message` when no file is known); a message of
    several lines keeps them, each made safe to print on its own and indented under the
    first. No reason word: that is for documents, not for people."""
    where = f"{exc.file}{':' + str(exc.line) if exc.line else ''}: " if exc.file else ""
    first, *more = exc.message.split("\n")
    if where and first.startswith(where):
        where = ""  # the message names its place itself
    _say(f"error: {single_line(where)}{single_line(first)}"
         + "".join(f"\n  {single_line(line)}" for line in more), sys.stderr)


def error_line(text: str) -> None:
    """An error a command says in its own words (stderr)."""
    _say(printable(f"error: {text}"), sys.stderr)


def progress(text: str) -> None:
    """A line of progress while a command waits (stderr, so stdout stays a document)."""
    _say(printable(text), sys.stderr, flush=True)
