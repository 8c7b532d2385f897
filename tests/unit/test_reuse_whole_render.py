"""A whole render handed back when nothing it depended on changed (`render.reuse`), and the
tree's fingerprint that tells (`source.tree`). A real folder of raw YAML, no tools needed.

File times come from the filesystem's clock, so every test sets its files' modification
times an hour back and scans with a clock ten seconds ahead: no file is "racy" unless a test
makes it so, and an edit always moves a file's modification time."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from gitgate.errors import Reason
from gitgate.model.objects import ObjectRef
from gitgate.passes.onepass import plan_rendered
from gitgate.render.cache import RenderCache
from gitgate.render.pipeline import render_repo
from gitgate.source import tree
from gitgate.source.tree import RACY_SECONDS, scan_repo
from tests.conftest import write_files

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
HOUR = 3600 * 1_000_000_000


def later() -> int:
    """A scan clock ten seconds ahead of the filesystem's: today's files are not racy."""
    return time.time_ns() + 10 * 1_000_000_000


def cm(name: str, value: str = "1") -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: web}}\n"
            f"data: {{v: '{value}'}}\n")


REPO = {
    "gitgate.yaml": "defaults:\n  placement: {clusterAffinity: {clusterNames: [member1]}}\n",
    "ns/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n",
    "app-a/cm.yaml": cm("a"),
    "app-b/cm.yaml": cm("b"),
    "app-c/thing.yaml": ("apiVersion: example.io/v1\nkind: Thing\n"
                         "metadata: {name: t, namespace: web}\n"),
}


def aged(root: Path) -> None:
    """Every file's modification time an hour back."""
    old = time.time_ns() - HOUR
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            os.utime(path, ns=(old, old), follow_symlinks=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write_files(tmp_path, REPO)
    aged(tmp_path)
    return tmp_path


def edit(path: Path, text: str) -> None:
    path.write_text(text)  # its modification time becomes now: an hour after the others


# ---------------------------------------------------------------- the tree's fingerprint

def test_the_fingerprint_is_stable_and_moves_with_every_kind_of_change(repo: Path):
    first = scan_repo(repo, clock=later).fingerprint
    assert first and scan_repo(repo, clock=later).fingerprint == first
    seen = {first}

    def moved() -> None:
        now = scan_repo(repo, clock=later).fingerprint
        assert now and now not in seen
        seen.add(now)

    edit(repo / "app-a/cm.yaml", cm("a", "2"))  # the same size, new content
    moved()
    edited = scan_repo(repo, clock=later).fingerprint
    (repo / "app-b/extra.yaml").write_text(cm("b2"))  # a file added
    moved()
    (repo / "app-b/extra.yaml").unlink()  # and removed: the tree is as it was before
    assert scan_repo(repo, clock=later).fingerprint == edited
    (repo / "app-c/link.yaml").symlink_to(repo / "app-a/cm.yaml")  # a link inside
    moved()
    (repo / "app-c/link.yaml").unlink()
    (repo / "app-c/link.yaml").symlink_to("/etc/hostname")  # a link leaving the repo
    moved()
    (repo / "app-c/folder").symlink_to(repo / "app-b", target_is_directory=True)
    moved()
    os.chmod(repo / "app-b/cm.yaml", 0o600)  # its change time moves: read it again
    moved()


def test_a_file_changed_just_before_the_scan_is_told_by_its_content(repo: Path):
    """Its next edit may fall in the same tick of the filesystem's clock and keep its stamp
    (Git's racy-clean files): the scan hashes such a file's bytes besides its stamp."""
    edit(repo / "app-a/cm.yaml", cm("a", "2"))
    racy = scan_repo(repo)  # the real clock: the edit is a moment old (and the fixture's
    assert racy.fingerprint and "app-a/cm.yaml" in racy.racy  # aging moved change times)
    assert all(racy.racy[file] == racy.digest(file) for file in racy.racy)
    assert "app-a/cm.yaml" in scan_repo(
        repo, clock=lambda: time.time_ns() + (RACY_SECONDS - 1) * 10**9).racy
    calm = scan_repo(repo, clock=later)
    assert calm.racy == {} and calm.fingerprint == racy.fingerprint  # the stamps are equal
    future = time.time_ns() + HOUR  # a file dated ahead of the clock (skew) is racy too
    os.utime(repo / "app-b/cm.yaml", ns=(future, future))
    assert "app-b/cm.yaml" in scan_repo(repo, clock=later).racy


# ---------------------------------------------------------------- the render handed back

def render(repo: Path, cache: RenderCache, **kwargs):
    return render_repo(repo, None, cache=cache, clock=later, **kwargs)


def names(rendered) -> dict[str, list[str]]:
    return {r.source.path: sorted(str(o["metadata"]["name"]) for o in r.objects)
            for r in rendered.rendered}


def test_an_unchanged_repo_is_handed_back_whole_and_an_edit_is_seen(repo: Path):
    cache = RenderCache()
    first = render(repo, cache)
    again = render(repo, cache)
    assert cache.reused == 1 and again.rendered is first.rendered
    edit(repo / "app-a/cm.yaml", cm("a2"))
    changed = render(repo, cache)
    assert cache.reused == 1 and names(changed)["app-a"] == ["a2"]
    assert names(changed)["app-b"] == ["b"]
    assert render(repo, cache).rendered is changed.rendered and cache.reused == 2


def test_a_racy_render_is_handed_back_only_while_its_racy_files_hold_the_same_bytes(
        repo: Path, monkeypatch):
    cache = RenderCache()
    render(repo, cache)
    path = repo / "app-a/cm.yaml"
    edit(path, cm("a2"))
    racy = render_repo(repo, None, cache=cache)  # the real clock: the edit is a moment old
    assert names(racy)["app-a"] == ["a2"] and cache.reused == 0 and cache.whole is not None
    assert render_repo(repo, None, cache=cache).rendered is racy.rendered  # the same bytes
    assert render(repo, cache).rendered is racy.rendered and cache.reused == 2  # and later

    # a filesystem whose clock does not tick between two edits of the same size: the
    # file keeps its every stamp, and only its bytes tell
    tick = time.time_ns()
    note = tree._Scan.note

    def frozen(scan, rel: str, info) -> None:
        if rel != "app-a/cm.yaml":
            return note(scan, rel, info)
        return note(scan, rel, SimpleNamespace(
            st_dev=info.st_dev, st_ino=info.st_ino, st_size=info.st_size,
            st_mtime_ns=tick, st_ctime_ns=tick))

    monkeypatch.setattr(tree._Scan, "note", frozen)
    edit(path, cm("a3"))
    third = render_repo(repo, None, cache=cache)
    assert names(third)["app-a"] == ["a3"] and cache.reused == 2
    edit(path, cm("a4"))  # same size, same stamps, other bytes
    assert scan_repo(repo).fingerprint == third.tree.fingerprint
    assert names(render_repo(repo, None, cache=cache))["app-a"] == ["a4"]
    assert cache.reused == 2
    assert render_repo(repo, None, cache=cache).rendered is not third.rendered
    edit(path, cm("a5"))  # and seen by a calm scan after it (the file no longer racy)
    assert names(render(repo, cache))["app-a"] == ["a5"]


def test_a_file_racy_once_is_read_once_more_and_not_again_once_its_stamp_tells(
        repo: Path, monkeypatch):
    """A fresh checkout's files are all racy at its first scan; a later pass that finds
    them calm checks their bytes once and from then on trusts their stamps."""
    cache = RenderCache()
    render(repo, cache)
    edit(repo / "app-a/cm.yaml", cm("a2"))
    racy = render_repo(repo, None, cache=cache)  # the real clock: the edit is a moment old
    assert cache.whole is not None
    was_racy = sorted(f for f, _ in cache.whole[0].racy)  # the edit's, and fresh ctimes
    assert "app-a/cm.yaml" in was_racy
    read: list[str] = []
    digest = tree.RepoTree.digest
    monkeypatch.setattr(tree.RepoTree, "digest",
                        lambda self, file: read.append(file) or digest(self, file))
    assert render(repo, cache).rendered is racy.rendered  # calm: their bytes checked once
    assert sorted(read) == was_racy
    assert render(repo, cache).rendered is racy.rendered and sorted(read) == was_racy
    edit(repo / "app-a/cm.yaml", cm("a3"))  # and an edit moves its stamp
    assert names(render(repo, cache))["app-a"] == ["a3"]


def test_a_change_of_share_discovery_or_budget_renders_again(repo: Path, monkeypatch):
    cache = RenderCache()
    answers = {"Thing": True}

    def scope_of(api_version: str, kind: str) -> bool | None:
        return answers.get(kind)

    def mine_a(source) -> bool:
        return source.path != "app-b"

    def summarize(rendered, scopes, warnings):
        return rendered  # the share is what is under test, not the summary

    render(repo, cache, scope_of=scope_of)
    render(repo, cache, scope_of=scope_of)
    assert cache.reused == 1
    answers["Thing"] = False  # the API server now serves Thing cluster-scoped
    placed = render(repo, cache, scope_of=scope_of)
    assert cache.reused == 1
    thing = next(r for r in placed.rendered if r.source.path == "app-c").objects[0]
    assert "namespace" not in thing["metadata"]
    render(repo, cache)  # discovery not asked at all
    assert cache.reused == 1
    render(repo, cache, scope_of=scope_of, mine=mine_a, summarize=summarize)
    render(repo, cache, scope_of=scope_of, mine=mine_a, summarize=summarize)
    assert cache.reused == 2
    render(repo, cache, scope_of=scope_of, mine=lambda s: True, summarize=summarize)
    assert cache.reused == 2  # app-b became this replica's
    monkeypatch.setenv("GITGATE_RENDER_MAX_OBJECTS", "0")
    render(repo, cache, scope_of=scope_of, mine=lambda s: True, summarize=summarize)
    assert cache.reused == 2  # another budget: the pass's total is checked again


def test_only_a_failure_the_files_decide_is_handed_back(repo: Path):
    cache = RenderCache()
    (repo / "app-b/cm.yaml").write_text(cm("a"))  # app-a's object rendered twice
    aged(repo)
    first = render(repo, cache)
    clash = {p.reason for r in first.rendered for p in r.problems}
    assert clash == {Reason.DUPLICATE_OBJECT}
    assert render(repo, cache).rendered is first.rendered  # the files decide it
    (repo / "app-b/cm.yaml").write_text("kind: [\n")  # a template error
    aged(repo)
    broken = render(repo, cache)
    assert {p.reason for r in broken.rendered for p in r.problems} == {Reason.RENDER_FAILED}
    assert cache.whole is None  # tried again on every pass (a tool's timeout may pass)
    assert render(repo, cache).rendered is not broken.rendered


def test_a_handed_back_render_is_still_planned_at_the_pass_time(repo: Path):
    """Gates are read and judged on every pass: a hold that ends lifts on an unchanged
    render."""
    write_gate = {"gates/hold.yaml": (
        "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: hold}\n"
        f"spec: {{bundles: [app-a], action: hold, reason: INC-9, "
        f"until: '{(NOW + timedelta(hours=1)).isoformat()}'}}\n")}
    write_files(repo, write_gate)
    aged(repo)
    cache = RenderCache()
    render(repo, cache)
    kept = render(repo, cache)
    assert cache.reused == 1
    held = plan_rendered(kept, NOW, "r1")
    lifted = plan_rendered(kept, NOW + timedelta(hours=2), "r1")
    verdict = {b.bundle.name: str(b.verdict.verdict) for b in held.bundles}
    assert verdict["app-a"] == "held" and verdict["app-b"] == "apply"
    assert {str(b.verdict.verdict) for b in lifted.bundles} == {"apply"}
    assert ObjectRef("", "ConfigMap", "web", "a") in next(
        b for b in lifted.bundles if b.bundle.name == "app-a").bundle.refs
