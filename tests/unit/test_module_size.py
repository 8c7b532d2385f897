"""No module of gitgate is longer than 400 lines: a module holds one job, and a file past that
size holds several (split it along them)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gitgate"
LIMIT = 400


def too_long(root: Path, limit: int = LIMIT) -> dict[str, int]:
    """Each module under `root` longer than `limit` lines, with its length."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[str(path.relative_to(root))] = lines
    return found


def test_no_module_of_gitgate_is_over_400_lines():
    assert too_long(PACKAGE) == {}


def test_the_check_finds_a_long_module(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    assert too_long(tmp_path) == {"pkg/long.py": LIMIT + 1}
