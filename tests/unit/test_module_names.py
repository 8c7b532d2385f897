"""One name, one module: no two modules of gitgate share a name (a traceback, a log line or
an import that says `check` or `hooks` means one thing), and no module shares its name with
a package."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gitgate"


def same_names(root: Path) -> dict[str, list[str]]:
    """Each name used by more than one module or package under `root`."""
    seen: dict[str, list[str]] = defaultdict(list)
    for path in root.rglob("*.py"):
        if "__pycache__" in path.parts or path.name in ("__init__.py", "__main__.py"):
            continue
        seen[path.stem].append(str(path.relative_to(root)))
    for folder in root.rglob("*/"):
        if folder.is_dir() and (folder / "__init__.py").exists():
            seen[folder.name].append(str(folder.relative_to(root)) + "/")
    return {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}


def test_no_two_modules_of_gitgate_share_a_name():
    assert same_names(PACKAGE) == {}


def test_the_check_finds_a_shared_name(tmp_path):
    for path in ("a/__init__.py", "a/hooks.py", "b/__init__.py", "b/hooks.py",
                 "status/__init__.py", "output/__init__.py", "output/status.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert same_names(tmp_path) == {"hooks": ["a/hooks.py", "b/hooks.py"],
                                    "status": ["output/status.py", "status/"]}


TESTS = PACKAGE.parent / "tests"


def test_no_test_module_imports_another() -> None:
    """Test modules share helpers through `tests.support` only, never by importing each
    other (a test module imported by another runs its imports twice and hides where a helper
    lives)."""
    assert importing_tests(TESTS) == []


def importing_tests(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            words = line.strip().split()
            if len(words) >= 2 and words[0] in ("from", "import") and \
                    words[1].split(".")[-1].startswith("test_"):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_the_check_finds_a_test_module_imported_by_another(tmp_path):
    (tmp_path / "test_a.py").write_text("from tests.integration.test_b import helper\n")
    (tmp_path / "test_c.py").write_text("from tests.support.applyrepo import Repo\n")
    assert importing_tests(tmp_path) == [
        "test_a.py:1: from tests.integration.test_b import helper"]
