"""Only `gitgate.output` writes to the terminal: a command's text, tables and errors all come
from there, so a change to what users see has one place to go."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gitgate"


def terminal_writes(source: str) -> list[int]:
    """Lines that call print() or touch sys.stdout / sys.stderr."""
    def writes(node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return node.func.id == "print"
        return (isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")
                and isinstance(node.value, ast.Name) and node.value.id == "sys")

    return sorted({node.lineno for node in ast.walk(ast.parse(source)) if writes(node)})


def test_only_the_output_package_writes_to_the_terminal():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}"
             for path in sorted(PACKAGE.rglob("*.py"))
             if "output" not in path.relative_to(PACKAGE).parts
             for line in terminal_writes(path.read_text())]
    assert found == [], "print through gitgate.output.console instead:\n" + "\n".join(found)


def test_the_check_finds_prints_and_stream_writes():
    assert terminal_writes("print('x')\n") == [1]
    assert terminal_writes("import sys\nsys.stderr.write('x')\n") == [2]
    assert terminal_writes("log.info('x')\n") == []
