"""YAML reading and writing with ruamel.yaml: plain data out, line numbers kept for errors."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError


class _Constructor(RoundTripConstructor):
    """Timestamps stay strings, as the Kubernetes API sees them."""


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", RoundTripConstructor.construct_yaml_str)


class _FastConstructor(SafeConstructor):
    """Timestamps stay strings on the fast path too."""


_FastConstructor.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)


class YamlSyntaxError(ValueError):
    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Document:
    data: Any
    line: int  # 1-based line where the document's content starts
    key_lines: dict[tuple[str, ...], int] | None = None  # mapping key path -> 1-based line

    def line_of(self, path: tuple[str, ...]) -> int:
        """The line of the deepest known key along `path` (the document start if none)."""
        lines = self.key_lines or {}
        for end in range(len(path), 0, -1):
            if path[:end] in lines:
                return lines[path[:end]]
        return self.line


def _reader() -> YAML:
    yaml = YAML(typ="rt")
    yaml.Constructor = _Constructor
    yaml.allow_duplicate_keys = False
    return yaml


def to_plain(value: Any) -> Any:
    """Turn ruamel's round-trip containers and scalars into dict/list/str/int/float/bool/None."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def _key_lines(data: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    lines: dict[tuple[str, ...], int] = {}
    if isinstance(data, dict) and hasattr(data, "lc"):
        for key, value in data.items():
            path = (*prefix, str(key))
            with contextlib.suppress(KeyError, TypeError):
                lines[path] = data.lc.key(key)[0] + 1
            lines.update(_key_lines(value, path))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            lines.update(_key_lines(value, (*prefix, str(index))))
    return lines


def _line_of(data: Any) -> int:
    lc = getattr(data, "lc", None)
    return (lc.line + 1) if lc is not None and lc.line is not None else 1


def _fast_reader() -> YAML:
    yaml = YAML(typ="safe")  # the C parser (ruamel.yaml.clib) where it is installed
    yaml.Constructor = _FastConstructor
    yaml.allow_duplicate_keys = False
    return yaml


def load_documents(text: str, *, located: bool = False,
                   key_lines: bool = False) -> Iterator[Document]:
    """Yield every non-empty document of a multi-document YAML stream.

    Without `located`, documents come from the fast safe loader and `line` is 0; ask again with
    `located=True` for lines (and `key_lines=True` for the line of every mapping key). Raises
    YamlSyntaxError with the 1-based line of the problem.
    """
    if not (located or key_lines):
        try:
            fast = [Document(to_plain(d), 0) for d in _fast_reader().load_all(text)
                    if d is not None]
        except YAMLError:
            fast = None  # the located path below reports the error with its line
        if fast is not None:
            yield from fast
            return
    try:
        for data in _reader().load_all(io.StringIO(text)):
            if data is None:
                continue
            yield Document(to_plain(data), _line_of(data),
                           _key_lines(data) if key_lines else None)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlSyntaxError(f"invalid YAML: {problem}", line) from None
    except YAMLError as exc:
        raise YamlSyntaxError(f"invalid YAML: {exc}", None) from None


def load_one(text: str) -> Any:
    """Load a single-document YAML file (config files); None when empty."""
    docs = list(load_documents(text))
    if len(docs) > 1:
        second = list(load_documents(text, located=True))[1].line
        raise YamlSyntaxError("expected one YAML document, found several", second)
    return docs[0].data if docs else None


def dump_all(documents: list[Any], comments: list[str | None] | None = None) -> str:
    """Write documents as a multi-document stream, each optionally preceded by a comment line."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    for index, doc in enumerate(documents):
        out.write("---\n")
        comment = comments[index] if comments else None
        if comment:
            out.write(f"# {comment}\n")
        yaml.dump(doc, out)
    return out.getvalue()


def dump_one(document: Any) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()
