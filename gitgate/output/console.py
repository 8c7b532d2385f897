"""The one place gitgate's commands write to the terminal: documents and tables to stdout,
warnings and errors to stderr, each error naming where it is and what went wrong."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from gitgate.errors import GitgateError
from gitgate.model import Problem


def out(text: str) -> None:
    """Text for stdout; non-empty text ends in a newline."""
    sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")


def out_json(document: Any) -> None:
    out(json.dumps(document, indent=2))


def warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def problems(errors: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
    for warning in warnings:
        print(f"warning: {warning.location()}: {warning.message}", file=sys.stderr)
    for problem in errors:
        print(f"error: {problem.location()}: [{problem.reason}] {problem.message}",
              file=sys.stderr)


def error(exc: GitgateError) -> None:
    where = f" ({exc.file}{':' + str(exc.line) if exc.line else ''})" if exc.file else ""
    print(f"error: [{exc.reason}] {exc.message}{where}", file=sys.stderr)


def progress(text: str) -> None:
    """A line of progress while a command waits (stderr, so stdout stays a document)."""
    print(text, file=sys.stderr, flush=True)
