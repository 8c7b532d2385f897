"""YAML reading and writing with ruamel.yaml: plain data out, line numbers kept for errors."""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import os
import re
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError, YAMLWarning

from gitgate.model.shared import shared

# ruamel warns through Python's warnings of what YAML allows: an anchor defined again (an
# alias names the latest, as in go-yaml, which kubectl and helm read with), a YAML 1.1 float
# without a dot. The warning went to stderr as it stood, naming "<file>" for any file, in
# the middle of gitgate's own output; what gitgate reads is what go-yaml reads, so it is not
# printed at all
warnings.filterwarnings("ignore", category=YAMLWarning)


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
class YamlLimits:
    """What one YAML text may cost. Every file gitgate parses (and every tool's output) goes
    through these: a text over a limit is refused with a message naming the limit and the
    environment variable that raises it, before it can use unbounded time or memory."""

    max_bytes: int = 8 << 20  # GITGATE_YAML_MAX_BYTES
    max_nodes: int = 1_000_000  # values once aliases are expanded: GITGATE_YAML_MAX_NODES
    max_depth: int = 100  # nesting of mappings and lists: GITGATE_YAML_MAX_DEPTH

    @classmethod
    def from_env(cls, *, max_bytes: int | None = None) -> YamlLimits:
        def number(name: str, default: int) -> int:
            raw = os.environ.get(name, "")
            return int(raw) if raw.isdigit() else default
        base = cls(max_bytes=max_bytes or cls.max_bytes)
        return cls(number("GITGATE_YAML_MAX_BYTES", base.max_bytes),
                   number("GITGATE_YAML_MAX_NODES", base.max_nodes),
                   number("GITGATE_YAML_MAX_DEPTH", base.max_depth))


class _Budget:
    def __init__(self, limits: YamlLimits):
        self.limits = limits
        self.nodes = 0

    def spend(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > self.limits.max_nodes:
            raise YamlSyntaxError(
                f"the YAML expands to more than {self.limits.max_nodes} values (aliases "
                "repeating aliases?); raise GITGATE_YAML_MAX_NODES if it is meant", None)
        if depth > self.limits.max_depth:
            raise YamlSyntaxError(
                f"the YAML nests deeper than {self.limits.max_depth} levels; raise "
                "GITGATE_YAML_MAX_DEPTH if it is meant", None)


_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


def _flow_depth(text: str) -> int:
    """The deepest nesting of [ and { outside quotes and comments (a cheap look before the
    parser, which recurses on nesting)."""
    deepest = 0
    for line in text.splitlines():
        if "[" not in line and "{" not in line:
            continue
        depth = 0
        for char in _QUOTED.sub("", line.split(" #", 1)[0]):
            if char in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif char in "]}":
                depth -= 1
    return deepest


def check_limits(text: str, limits: YamlLimits) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        raise YamlSyntaxError(f"the file is {size} bytes, over the {limits.max_bytes}-byte "
                              "limit; split it, or raise GITGATE_YAML_MAX_BYTES", None)
    if text.count("[") + text.count("{") > limits.max_depth and (
            _flow_depth(text) > limits.max_depth):
        raise YamlSyntaxError(f"the YAML nests deeper than {limits.max_depth} levels; raise "
                              "GITGATE_YAML_MAX_DEPTH if it is meant", None)
    indent = max((len(m.group(0)) for m in re.finditer(r"^ +", text, re.M)), default=0)
    if indent > limits.max_depth * 8:
        raise YamlSyntaxError(f"a line is indented {indent} columns, deeper than "
                              f"{limits.max_depth} nested levels can need; raise "
                              "GITGATE_YAML_MAX_DEPTH if it is meant", None)


# what ruamel quotes of the syntax itself: a token (`','`, `']'`, `'<stream end>'`), kept;
# any other quoted text longer than a few characters may be a value, and goes
_QUOTED_IN_PROBLEM = re.compile(r"(?P<token>'<[a-z ]+>'|'[^\w\s']{1,3}')"
                                r"|\"[^\"]{4,}\"|'[^']{4,}'")
_TOKEN_WORDS = {"'<stream end>'": "the end of the file", "<stream end>": "the end of the file",
                "'<document end>'": "the end of the document",
                "'<block end>'": "the end of the indented block",
                "<block end>": "the end of the indented block"}
# what ruamel's context names, in the user's words, and what closes it
_OPENED = {"while parsing a flow sequence": ("the list '['", "']'"),
           "while parsing a flow mapping": ("the mapping '{'", "'}'"),
           "while scanning a quoted scalar": ("the quoted string", "its quote")}


def safe_problem(problem: str) -> str:
    """ruamel's problem text without the document's values (a Secret's duplicated key quotes
    both values): key names and YAML's own tokens stay, longer quoted text goes."""
    duplicate = re.match(r'found duplicate key "([^"]*)"', problem)
    if duplicate:
        return f'found duplicate key "{duplicate.group(1)}"'
    kept = _QUOTED_IN_PROBLEM.sub(
        lambda m: m.group(0) if m.group("token") else "(…)", problem)
    for token, words in _TOKEN_WORDS.items():
        kept = kept.replace(token, words)
    return kept


def syntax_message(exc: MarkedYAMLError, text: str) -> tuple[str, int | None]:
    """What a YAML syntax error says to a person: what is wrong, on which line (the line of
    the opening `[`, `{` or quote when the file ends before it is closed, never a line past
    the file's end) and what to do."""
    problem = safe_problem(exc.problem or exc.context or "invalid YAML")
    problem_line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
    context_line = exc.context_mark.line + 1 if exc.context_mark is not None else None
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    opened = _OPENED.get(exc.context or "")
    if opened is not None and context_line is not None:
        what, closer = opened
        at_end = problem_line is None or problem_line > lines or "end of" in problem
        if at_end:
            return (f"invalid YAML: {what} opened on line {context_line} is never closed "
                    f"({problem}); close it with {closer}", context_line)
        return (f"invalid YAML: {problem} inside {what} opened on line {context_line}; "
                f"close it with {closer} or add the missing ','", problem_line)
    line = problem_line or context_line
    if line is not None and line > lines:
        line = max(lines, 1)
    return f"invalid YAML: {problem}; fix the YAML syntax on this line", line


@dataclass(frozen=True)
class Document:
    data: Any
    line: int  # 1-based line where the document's content starts
    key_lines: dict[tuple[str, ...], int] | None = None  # mapping key path -> 1-based line

    def line_of(self, path: tuple[str, ...]) -> int:
        """The line of the deepest known key along `path`; a list item (which has no key of
        its own) by its first key; the document start if none."""
        lines = self.key_lines or {}
        for end in range(len(path), 0, -1):
            if path[:end] in lines:
                return lines[path[:end]]
            below = [line for key, line in lines.items() if key[:end] == path[:end]]
            if below:
                return min(below)
        return self.line


def _reader() -> YAML:
    yaml = YAML(typ="rt")
    yaml.Constructor = _Constructor
    yaml.allow_duplicate_keys = False
    return yaml


def to_plain(value: Any, budget: _Budget | None = None, depth: int = 0) -> Any:
    """Turn ruamel's round-trip containers and scalars into dict/list/str/int/float/bool/None;
    with a budget, stop at its node and depth limits (aliases are expanded here). Keys and
    short strings come out shared (`model.shared`): rendered objects repeat them by the
    thousand."""
    if budget is not None:
        budget.spend(depth)
    if isinstance(value, dict):
        return {shared(str(k)): to_plain(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v, budget, depth + 1) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return shared(str(value))


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


_readers = threading.local()


def _fast_reader() -> YAML:
    """One per thread (a YAML object is not thread-safe, and building one costs more than
    parsing a small file)."""
    yaml = getattr(_readers, "fast", None)
    if yaml is None:
        yaml = YAML(typ="safe")  # the C parser (ruamel.yaml.clib) where it is installed
        yaml.Constructor = _FastConstructor
        yaml.allow_duplicate_keys = False
        _readers.fast = yaml
    return yaml


def load_documents(text: str, *, located: bool = False, key_lines: bool = False,
                   limits: YamlLimits | None = None) -> Iterator[Document]:
    """Yield every non-empty document of a multi-document YAML stream, within `limits`
    (YamlLimits.from_env() when not given).

    Without `located`, documents come from the fast safe loader and `line` is 0; ask again with
    `located=True` for lines (and `key_lines=True` for the line of every mapping key). Raises
    YamlSyntaxError with the 1-based line of the problem; its message never quotes a value.
    """
    limits = limits or YamlLimits.from_env()
    check_limits(text, limits)
    budget = _Budget(limits)
    if not (located or key_lines):
        fast_reader = _fast_reader()
        try:
            fast = [Document(to_plain(d, budget), 0) for d in fast_reader.load_all(text)
                    if d is not None]
        except (YAMLError, RecursionError, ValueError, TypeError) as exc:
            if isinstance(exc, YamlSyntaxError):
                raise
            fast = None  # the located path below reports the error with its line
        finally:
            # ruamel's YAML object appends a record per document it ever read and never
            # drops one: a reader kept for the life of a `gitgate run` grew without end
            fast_reader.doc_infos.clear()
        if fast is not None:
            yield from fast
            return
    budget = _Budget(limits)
    try:
        for data in _reader().load_all(io.StringIO(text)):
            if data is None:
                continue
            yield Document(to_plain(data, budget), _line_of(data),
                           _key_lines(data) if key_lines else None)
    except MarkedYAMLError as exc:
        raise YamlSyntaxError(*syntax_message(exc, text)) from None
    except YAMLError as exc:
        raise YamlSyntaxError(f"invalid YAML: {safe_problem(str(exc))}; fix the YAML syntax",
                              None) from None
    except RecursionError:
        raise YamlSyntaxError(f"the YAML nests too deeply (over {limits.max_depth} levels); "
                              "raise GITGATE_YAML_MAX_DEPTH if it is meant", None) from None
    except (ValueError, TypeError) as exc:  # a constructor's complaint (a bad date, a tag)
        if isinstance(exc, YamlSyntaxError):
            raise
        raise YamlSyntaxError(f"invalid YAML: a value cannot be read ({type(exc).__name__})",
                              None) from None


def key_line(text: str, path: tuple[str, ...]) -> int | None:
    """The 1-based line of the deepest key along `path` in a one-document text (list items by
    their index), None when the text cannot be read or has no such top-level key."""
    try:
        documents = list(load_documents(text, key_lines=True))
    except YamlSyntaxError:
        return None
    if not documents or not path or path[:1] not in (documents[0].key_lines or {}):
        return None
    return documents[0].line_of(path)


def load_one(text: str) -> Any:
    """Load a single-document YAML file (config files); None when empty. The same text is
    parsed once per process (a loop reads the same bundle.yaml and kustomization.yaml files
    at every pass); each caller gets its own copy."""
    return copy.deepcopy(_load_one(text, YamlLimits.from_env()))


@functools.lru_cache(maxsize=8192)
def _load_one(text: str, limits: YamlLimits) -> Any:
    docs = list(load_documents(text, limits=limits))
    if len(docs) > 1:
        second = list(load_documents(text, located=True, limits=limits))[1].line
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
    """One document, block style; a long scalar (a digest, a message) stays on its line."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()
