"""Every command's `-o`: one registry of printers keyed by the format's name. A command hands
over a `Printable` (its document, its text, and what its text leaves to stderr); the format
picks what to print and how. A format added here is offered by every command whose document
it can print (`DOCUMENT_FORMATS`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitgate.errors import ConfigError
from gitgate.output import console
from gitgate.yamlio import dump_one


@dataclass(frozen=True)
class Printable:
    """What a command shows. `document`: its JSON document; `text`: its table or text (the
    argument says `-o wide`); `aside`: warnings the text formats say on stderr, which the
    document carries itself; `own`: a format the command prints its own way (`render -o
    yaml` is a stream of objects, not its document)."""

    document: Callable[[], Any]
    text: Callable[[bool], str] | None = None
    aside: Callable[[], list[str]] = list
    own: Mapping[str, Callable[[], str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Printer:
    said: Callable[[Printable], str]
    document: bool  # prints the document (else the text, with its warnings aside)


def _text(wide: bool) -> Callable[[Printable], str]:
    def said(what: Printable) -> str:
        if what.text is None:
            raise ConfigError("this command has no table: use -o json")
        return what.text(wide)
    return said


def _yaml(what: Printable) -> str:
    # written from the JSON document: a reason's enum, a tuple (what JSON writes as a string
    # or a list) would be refused by YAML's safe dumper
    return dump_one(json.loads(json.dumps(what.document())))


PRINTERS: dict[str, Printer] = {
    "table": Printer(_text(False), document=False),
    "text": Printer(_text(False), document=False),
    "wide": Printer(_text(True), document=False),
    "json": Printer(lambda what: json.dumps(what.document(), indent=2), document=True),
    "yaml": Printer(_yaml, document=True),
}
DOCUMENT_FORMATS = tuple(name for name, printer in PRINTERS.items() if printer.document)


def printer(output: str) -> Printer:
    found = PRINTERS.get(output)
    if found is None:
        raise ConfigError(f"unknown output format {output!r}: use one of "
                          f"{', '.join(PRINTERS)}")
    return found


def printed(output: str, what: Printable) -> str:
    """`what` as `-o output` prints it."""
    own = what.own.get(output)
    return own() if own is not None else printer(output).said(what)


def show(output: str, what: Printable) -> None:
    """Print `what` as `-o output` asks: to stdout, and a text format's warnings to stderr."""
    console.out(printed(output, what))
    if output not in what.own and not printer(output).document:
        for line in what.aside():
            console.warn(line)
