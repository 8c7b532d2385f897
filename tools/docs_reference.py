"""The documentation site's generated pages (an MkDocs hook, `hooks:` in mkdocs.yml).

Nothing here is copied by hand, so nothing can drift:
- `reference/cli.md` from gitgate's own argparse parser (`gitgate.cli.parser.build_parser`);
- `reference/files.md` from the JSON Schemas in docs/schema (gitgate.yaml, bundle.yaml, gates);
- `quickstart.md` from the README's quickstart section (the one a test runs as written).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "docs" / "schema"
FILE_SCHEMAS = (("gitgate-config.json", "gitgate.yaml", "the repo's root"),
                ("bundle.json", "bundle.yaml", "beside a source folder"),
                ("gate.json", "Gate", "a file in the gates folder"))
QUICKSTART_HEADING = "## Quickstart"


# --------------------------------------------------------------------------- text helpers

def escape_cell(text: str) -> str:
    """One Markdown table cell: no line breaks; outside code spans, `|` escaped and `<`, `>`
    shown as text."""
    parts = text.replace("\n", " ").split("`")
    for i in range(0, len(parts), 2):  # outside code spans (a `|` inside one stays as it is)
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
    return "`".join(parts)


def code(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


# --------------------------------------------------------------------------- the CLI

def _expand_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = parser.prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(c) for c in params["choices"])
    return str(action.help % params)


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return code(action.metavar or action.dest)  # type: ignore[arg-type]
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return code(names)
    if action.choices:
        value = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        value = action.metavar or action.dest.upper()  # type: ignore[assignment]
    return code(f"{names} {value}")


def _default(action: argparse.Action) -> str:
    default = action.default
    if default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
        return ""
    if isinstance(default, (list, tuple)):
        default = ",".join(str(d) for d in default)
    return code(str(default))


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | default | what it does |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        rows.append(f"| {_argument(action)} | {_default(action)} | "
                    f"{escape_cell(_expand_help(parser, action))} |")
    return rows


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, summaries.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def cli_reference() -> str:
    """Every command of gitgate's parser: what it does, its usage, its arguments with their
    defaults, and its examples."""
    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal's width
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from gitgate.cli.parser import build_parser

    parser = build_parser()
    out = ["# CLI reference", "",
           "Generated from gitgate's own argument parser when the site is built: every command, "
           "its arguments and their defaults, as `gitgate COMMAND --help` prints them. What the "
           "commands share (exit codes, output formats, kubeconfigs, instances) is in "
           "[Commands](commands.md).", "",
           "| command | what it does |", "| --- | --- |"]
    commands = _commands(parser)
    out += [f"| [`{name}`](#gitgate-{name}) | {escape_cell(summary)} |"
            for name, summary, _ in commands]
    out += ["", "Every command also takes `-h`/`--help`; `gitgate --version` prints the versions.",
            ""]
    for name, summary, sub in commands:
        out += [f"## gitgate {name}", "", escape_cell(summary[:1].upper() + summary[1:]) + ".", ""]
        if sub.description and sub.description != summary:
            out += ["```text", sub.description.strip("\n"), "```", ""]
        out += ["```text", sub.format_usage().strip(), "```", ""]
        out += _arguments_table(sub) + [""]
        if sub.epilog:
            out += ["```text", sub.epilog.strip("\n"), "```", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------- the file schemas

class Schemas:
    """The schema files, with `$ref`s to `#/...` and `other.json#/...` resolved."""

    def __init__(self, folder: Path) -> None:
        self.docs = {p.name: json.loads(p.read_text()) for p in folder.glob("*.json")}

    def resolve(self, node: dict[str, Any], file: str) -> tuple[dict[str, Any], str]:
        seen = 0
        while "$ref" in node and seen < 20:
            target, _, pointer = node["$ref"].partition("#")
            file = target or file
            resolved: Any = self.docs[file]
            for part in filter(None, pointer.split("/")):
                resolved = resolved[part]
            node = {**resolved, **{k: v for k, v in node.items() if k != "$ref"}}
            seen += 1
        return node, file


def _type_of(node: dict[str, Any], schemas: Schemas, file: str) -> str:
    node, file = schemas.resolve(node, file)
    if "const" in node:
        return code(json.dumps(node["const"]))
    if "enum" in node:
        return " or ".join(code(json.dumps(v)) for v in node["enum"])
    for key in ("oneOf", "anyOf"):
        if key in node and "type" not in node:
            return " or ".join(_type_of(alt, schemas, file) for alt in node[key])
    kind = node.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and isinstance(node.get("items"), dict):
        return "list of " + _type_of(node["items"], schemas, file)
    if "object" in kinds and isinstance(node.get("additionalProperties"), dict) \
            and "properties" not in node:
        return "map of " + _type_of(node["additionalProperties"], schemas, file)
    return " or ".join(kinds)


def _notes(node: dict[str, Any]) -> str:
    notes = []
    if "default" in node:
        notes.append("default " + code(json.dumps(node["default"])))
    if "pattern" in node:
        notes.append("matches " + code(node["pattern"]))
    if "minimum" in node:
        notes.append(f"at least {node['minimum']}")
    return "; ".join(notes)


def _fields(node: dict[str, Any], file: str, prefix: str, schemas: Schemas,
            rows: dict[str, tuple[str, str, str]], depth: int = 0) -> None:
    node, file = schemas.resolve(node, file)
    if depth > 8:
        return
    required = set(node.get("required", []))
    for name, child in (node.get("properties") or {}).items():
        resolved, child_file = schemas.resolve(child, file)
        path = f"{prefix}.{name}" if prefix else name
        described = child.get("description") or resolved.get("description") or ""
        notes = _notes(resolved)
        text = "; ".join(filter(None, [described, notes]))
        if name in required:
            text = ("**required.** " + text).strip()
        if path not in rows:
            rows[path] = (path, _type_of(child, schemas, file), text)
        _below(resolved, child_file, path, schemas, rows, depth + 1)


def _below(node: dict[str, Any], file: str, path: str, schemas: Schemas,
           rows: dict[str, tuple[str, str, str]], depth: int) -> None:
    """The fields inside a field: its own, its list items', and each alternative's."""
    if node.get("properties"):
        _fields(node, file, path, schemas, rows, depth)
    items = node.get("items")
    if isinstance(items, dict):
        resolved, items_file = schemas.resolve(items, file)
        _below(resolved, items_file, path + "[]", schemas, rows, depth + 1)
    for key in ("oneOf", "anyOf"):
        for alternative in node.get(key, []):
            resolved, alt_file = schemas.resolve(alternative, file)
            _below(resolved, alt_file, path, schemas, rows, depth + 1)


def files_reference() -> str:
    schemas = Schemas(SCHEMAS)
    out = ["# Files reference", "",
           "Generated from the JSON Schemas in `docs/schema/` when the site is built. Editors "
           "validate the same files with them: put "
           "`# yaml-language-server: $schema=<path to the schema>` on a file's first line. "
           "gitgate checks the same keys (a test keeps the two in step) and more, naming the "
           "line. An unknown field is an error.", ""]
    for file, title, where in FILE_SCHEMAS:
        schema = schemas.docs[file]
        out += [f"## {title}", "", f"Where: {where}. Schema: "
                f"[`docs/schema/{file}`](../schema/{file}).", "",
                escape_cell(schema.get("description", "")), "",
                "| field | type | what it says |", "| --- | --- | --- |"]
        rows: dict[str, tuple[str, str, str]] = {}
        _fields(schema, file, "", schemas, rows)
        out += [f"| {code(path)} | {escape_cell(kind)} | {escape_cell(text)} |"
                for path, kind, text in rows.values()]
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- the README

def readme_section(heading: str) -> str:
    """The README's section that starts with `heading`, up to the next `## ` heading."""
    text = (ROOT / "README.md").read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end != -1 else len(text)]


def quickstart() -> str:
    section = readme_section(QUICKSTART_HEADING)
    title, _, body = section.partition("\n")
    return "# " + title.removeprefix("## ") + "\n\n" + re.sub(
        r"\]\(docs/", "](", body).replace("](README.md", "](index.md")


# --------------------------------------------------------------------------- the hook

def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    pages = {"reference/cli.md": cli_reference(), "reference/files.md": files_reference(),
             "quickstart.md": quickstart()}
    for path, content in pages.items():
        files.append(File.generated(config, path, content=content))
    return files
