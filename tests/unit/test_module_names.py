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


# What a unit test module may be named after besides a module or package of gitgate (or of
# the project's bench/ and tools/, or a top-level folder such as deploy/): the project's
# documented concepts, and the conventions the whole code base is held to.
CONCEPTS = {
    "tenant": "a team's folders and what they may write (tenants: in gitgate.yaml)",
    "input_schemas": "the JSON Schemas of gitgate.yaml, bundle.yaml and gate files",
    "crd_fixture": "the stand-in Karmada CRDs the API emulator serves when ../shared is absent",
}
CONVENTIONS = {
    "module_names": "names say what a module is, and no two share one",
    "reason_vocabulary": "reason strings and texts live in gitgate/errors.py",
    "output_is_the_only_printer": "only gitgate/output writes to the terminal",
    "no_socket_no_process": "tests/unit touches no socket and starts no process",
    "module_size": "no module of gitgate is over 400 lines",
}
PROJECT = PACKAGE.parent


def named_things(package: Path, project: Path) -> set[str]:
    """Every name a unit test module may start with after `test_`: the modules and packages
    of gitgate, bench and tools, the project's top-level folders, the concepts and the
    conventions."""
    names = set(CONCEPTS) | set(CONVENTIONS)
    for root in (package, project / "bench", project / "tools"):
        names |= {p.stem for p in root.rglob("*.py") if p.name != "__init__.py"}
        names |= {p.parent.name for p in root.rglob("__init__.py")}
    names |= {p.name for p in project.iterdir() if p.is_dir() and not p.name.startswith(".")}
    return names - {"__main__", "__pycache__", "tests"}


def names_something(stem: str, names: set[str]) -> bool:
    """`test_<words>` names a thing when its first words, joined by `_` or run together
    (`test_bundle_record` for `bundlerecord`), are one of `names`, in the singular or the
    plural (`test_gates_...` for `gate`, `test_shard_...` for `shards`)."""
    words = stem.removeprefix("test_").split("_")
    for count in range(1, len(words) + 1):
        for joined in ("_".join(words[:count]), "".join(words[:count])):
            if {joined, joined + "s", joined.removesuffix("s")} & names:
                return True
    return False


def unnamed_tests(folder: Path, names: set[str]) -> list[str]:
    return sorted(p.name for p in folder.glob("test_*.py") if not names_something(p.stem, names))


def test_every_unit_test_module_names_what_it_tests():
    """A unit test module is found from the module it tests: `test_freezefirst.py` for
    `apply/freezefirst.py`, `test_transport_token_refresh.py` for one job of `transport.py`.
    A test of a concept or convention names it in CONCEPTS or CONVENTIONS above."""
    assert unnamed_tests(Path(__file__).parent, named_things(PACKAGE, PROJECT)) == [], (
        "rename these after the module they test (git mv), or add the concept they test")


def test_the_check_finds_a_test_named_after_nothing(tmp_path):
    for name in ("test_suspend_first.py", "test_freezefirst.py", "test_gates_fail.py",
                 "test_bundle_record.py", "test_tenant_creates.py"):
        (tmp_path / name).write_text("")
    assert unnamed_tests(tmp_path, {"freezefirst", "gate", "bundlerecord", "tenant"}) == [
        "test_suspend_first.py"]
