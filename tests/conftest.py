"""Shared fixtures: temporary repos written from plain dicts, and the real tools."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from gitgate.render.tools import Tools, find_tools
from gitgate.source.tree import RepoTree

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples" / "repo"


def write_files(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    def make(files: dict[str, str]) -> Path:
        return write_files(tmp_path / "repo", files)
    return make


def set_identity(repo, name: str = "On Call", email: str = "oncall@example.com") -> None:
    """The committer a test repo's commits (and gitgate's own) are made as."""
    with repo.config_writer() as config:
        config.set_value("user", "name", name)
        config.set_value("user", "email", email)


def committed_repo(root: Path, message: str = "initial"):
    """`root` made a Git repo on `main` with everything in it committed."""
    import git

    repo = git.Repo.init(root, initial_branch="main")
    set_identity(repo)
    repo.git.add("-A")
    repo.git.commit("-m", message)
    return repo


def memory_tree(files: dict[str, str], escaping: tuple[str, ...] = ()) -> RepoTree:
    """A RepoTree over plain strings, for the pure stages."""
    texts = {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()}
    return RepoTree(frozenset(texts), frozenset(escaping), texts.get,
                    read_bytes=lambda rel: texts[rel].encode() if rel in texts else None)


@pytest.fixture(autouse=True)
def no_gpg_daemon_left(monkeypatch):
    """No test leaves a gpg-agent (or keyboxd, dirmngr) running: gitgate stops the daemons of
    every keyring it makes, and so do the tests' own keys."""
    import uuid

    from tests.support.daemons import MARK, gpg_daemons_left

    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)
    yield
    left = gpg_daemons_left(mark)
    assert not left, f"gpg daemons left running: {left}"


_LAST_TEST: list[pytest.Item] = []


def pytest_runtest_setup(item: pytest.Item) -> None:
    _LAST_TEST[:] = [item]


@pytest.fixture(scope="session", autouse=True)
def no_process_left():
    """The run leaves no process behind: every process it starts inherits a mark of the
    run's own, and when the last test is done, any descendant of this process or any marked
    process still alive fails the run, named (and is then stopped). What the finished tests
    left is let go and collected first (pytest still holds the last test's fixture values at
    this point): a git.Repo's `cat-file` helpers end with the object that owns them."""
    import gc
    import uuid

    from tests.support.daemons import RUN_MARK, processes_left, stop

    mark = uuid.uuid4().hex
    os.environ[RUN_MARK] = mark
    yield
    for item in _LAST_TEST:
        if item.funcargs is not None:  # None once pytest dropped them (a skipped test)
            item.funcargs.clear()  # its fixtures are torn down; pytest drops them just after
    gc.collect()
    left = processes_left(mark)
    if left:
        stop(mark)
    assert not left, "processes the test run left running:\n" + "\n".join(left)


@pytest.fixture(scope="session", autouse=True)
def example_chart_store(tmp_path_factory):
    """Commands run by hand in a test (`main([...])`, the CLI in a subprocess) keep charts in
    a store of the run's own ($GITGATE_CHART_CACHE, never ~/.cache), seeded with
    examples/charts: examples/repo's published chart is found there by its locked digest,
    with no chart repository served. A test that sets the variable itself decides."""
    from gitgate.charts.store import CACHE_ENV
    from tests.support.democharts import seeded_store

    store = seeded_store(tmp_path_factory.mktemp("example-charts"))
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(store.folder)
    yield store
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


@pytest.fixture(scope="session")
def tools() -> Tools:
    venv_bin = str(Path(os.sys.executable).parent)
    os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    return find_tools()


# --------------------------------------------------------------------------- the API server
# Integration tests talk HTTP to the emulator in tests/kubeapi; with GITGATE_TEST_KUBECONFIG
# set they talk to that real cluster instead (the contract suite), in names unique to the run.

@pytest.fixture
def kube(tmp_path: Path):
    import uuid

    from gitgate.apiserver.transport import load_client
    from tests.kubeapi.server import KubeApiEmulator
    from tests.support.kubetarget import KubeTarget, RecordingKube, install_karmada_crds

    run_id = "gg" + uuid.uuid4().hex[:8]
    real = os.environ.get("GITGATE_TEST_KUBECONFIG")
    if real:
        cluster = RecordingKube(load_client(real))
        install_karmada_crds(cluster)
        target = KubeTarget(cluster, None, run_id, real)
        yield target
        target.cleanup()
        return
    with KubeApiEmulator() as emulator:
        kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
        yield KubeTarget(RecordingKube(load_client(str(kubeconfig))), emulator, run_id,
                         str(kubeconfig))


@pytest.fixture
def emulator():
    """The API emulator alone, for tests that act as Karmada's member controllers through
    `emulator.state` (a real cluster cannot be told what its members report)."""
    from tests.kubeapi.server import KubeApiEmulator

    with KubeApiEmulator() as api:
        yield api
