"""The manual holds to what it promises: the README stays a short front page, and every test
the Guarantees page names to hold a guarantee exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_LIMIT = 15 * 1024
GUARANTEES = ROOT / "docs/security/guarantees.md"


def test_the_readme_is_at_most_15_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; the manual belongs in docs/"


def test_the_readmes_links_reach_files_that_exist():
    text = (ROOT / "README.md").read_text()
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)
               if "://" not in t and not t.startswith("#")]
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []


# --------------------------------------------------------------------------- Guarantees

def cited_tests(page: str) -> list[str]:
    """Every code span of the Guarantees table's last column (the tests that hold a row)."""
    cited = []
    for line in page.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) < 3 or set(cells[-1]) <= {"-", " "} or cells[-1] == "tests":
            continue
        cited += re.findall(r"`([^`]+)`", cells[-1])
    return cited


def defined_functions(root: Path) -> set[str]:
    """The names of every test function and fixture defined under tests/."""
    names = set()
    for path in root.rglob("*.py"):
        names.update(re.findall(r"(?m)^\s*(?:async\s+)?def\s+(\w+)\s*\(", path.read_text()))
    return names


def missing(cited: list[str], root: Path) -> list[str]:
    """The cited paths that are not under `root`, and the cited test names defined nowhere in
    its tests/ (other code spans, such as a function the row explains, are not tests)."""
    defined = defined_functions(root / "tests")
    gone = []
    for name in cited:
        if "/" in name or name.endswith(".py"):
            if not (root / name).exists():
                gone.append(name)
        elif re.fullmatch(r"test_\w+", name) and name not in defined:
            gone.append(name)
    return gone


def test_every_test_the_guarantees_name_exists():
    cited = cited_tests(GUARANTEES.read_text())
    assert len(cited) > 50  # the table was read, not skipped
    assert missing(cited, ROOT) == []


def test_a_renamed_or_removed_test_is_caught(tmp_path):
    (tmp_path / "tests/unit").mkdir(parents=True)
    (tmp_path / "tests/unit/test_a.py").write_text("def test_kept():\n    pass\n")
    page = ("| guarantee | limit | tests |\n|---|---|---|\n"
            "| one | a | `tests/unit/test_a.py`, `test_kept`, `test_renamed` (3), `implies` |\n"
            "| two | b | `tests/unit/test_gone.py` |\n")
    assert cited_tests(page) == ["tests/unit/test_a.py", "test_kept", "test_renamed", "implies",
                                 "tests/unit/test_gone.py"]
    assert missing(cited_tests(page), tmp_path) == ["test_renamed", "tests/unit/test_gone.py"]


# --------------------------------------------------------------------------- generated pages

def reference_hook():
    """tools/docs_reference.py, the hook mkdocs.yml names (tools/ is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_reference",
                                                  ROOT / "tools/docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_has_every_command_and_flag_of_the_parser():
    import argparse

    from gitgate.cli.parser import build_parser

    page = reference_hook().cli_reference()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices
    for name, parser in sub.choices.items():
        assert f"\n## gitgate {name}\n" in page
        section = page.split(f"\n## gitgate {name}\n")[1].split("\n## gitgate ")[0]
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help") and action.help != argparse.SUPPRESS:
                    assert f"`{flag}" in section or f", {flag}" in section, (name, flag)


def test_the_files_reference_has_every_field_of_the_schemas():
    page = reference_hook().files_reference()
    for title in ("## gitgate.yaml", "## bundle.yaml", "## Gate"):
        assert f"\n{title}\n" in page
    for field in ("paths", "tenants[].clusters.labelSelector.matchLabels", "charts.maxSize",
                  "spec.windows[].cron", "spec.approve.digest", "spec.approve[].digest",
                  "clusters[].patches", "rollout.waves"):
        assert f"| `{field}` |" in page, field
    gate = page.split("\n## Gate\n")[1]
    assert "| `spec.reason` | string | **required.**" in gate
