"""A gate gitgate cannot read holds every bundle, whatever shape the unreadable thing takes:
another extension, a link out of the repo, a symlinked folder, a configured gates folder that
is missing. Over a real folder (scan_repo) and plain data."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from gitgate.errors import ConfigError
from gitgate.model import Unreadable
from gitgate.plan import make_plan
from gitgate.source.config import parse_repo_config
from gitgate.source.tree import gate_texts, scan_repo
from tests.conftest import write_files

GATE = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: freeze}\n"
        "spec: {bundles: [app], reason: freeze}\n")
NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)


def unreadable(texts: dict) -> dict[str, str]:
    return {f: t.why for f, t in texts.items() if isinstance(t, Unreadable)}


def test_any_case_and_json_are_read_as_gates(tmp_path):
    root = write_files(tmp_path, {"gates/a.YAML": GATE, "gates/b.json":
                                  '{"apiVersion": "gitgate.io/v1alpha1", "kind": "Gate", '
                                  '"metadata": {"name": "b"}, "spec": {"bundles": ["x"], '
                                  '"reason": "r"}}', "gates/README.md": "# our gates\n"})
    texts = gate_texts(scan_repo(root), "gates")
    assert set(texts) == {"gates/a.YAML", "gates/b.json"}
    plan = make_plan((), texts, NOW, "r")
    assert {g.gate.name for g in plan.gates} == {"freeze", "b"} and not plan.invalid_gates


@pytest.mark.parametrize("name", ["freeze.yaml.bak", "freeze.txt", "freeze"])
def test_another_file_in_the_gates_folder_holds_everything(tmp_path, name):
    root = write_files(tmp_path, {f"gates/{name}": GATE})
    texts = gate_texts(scan_repo(root), "gates")
    assert "is not a gate file" in unreadable(texts)[f"gates/{name}"]
    plan = make_plan((), texts, NOW, "r")
    assert [g.file for g in plan.invalid_gates] == [f"gates/{name}"]


def test_symlinked_gates_folder_and_links_out_hold_everything(tmp_path):
    repo = tmp_path / "repo"
    write_files(repo, {"real/freeze.yaml": GATE})
    os.symlink(repo / "real", repo / "gates")
    assert "symlinked folder" in unreadable(gate_texts(scan_repo(repo), "gates"))["gates"]
    os.unlink(repo / "gates")
    (repo / "gates").mkdir()
    os.symlink(repo / "real", repo / "gates" / "more")
    (tmp_path / "outside.yaml").write_text(GATE)
    os.symlink(tmp_path / "outside.yaml", repo / "gates" / "out.yaml")
    why = unreadable(gate_texts(scan_repo(repo), "gates"))
    assert "symlinked folder" in why["gates/more"]
    assert "leading out of the repo" in why["gates/out.yaml"]


def test_a_configured_gates_path_must_exist_and_stay_inside(tmp_path):
    root = write_files(tmp_path, {"apps/cm.yaml": "kind: ConfigMap\n"})
    assert gate_texts(scan_repo(root), "gates") == {}  # the default may be absent
    why = unreadable(gate_texts(scan_repo(root), "freeze-gates", configured=True))
    assert "does not exist" in why["freeze-gates"]
    for bad in ("../gates", "/etc", ".", "a/../../b"):
        with pytest.raises(ConfigError, match="must be a folder inside the repo"):
            parse_repo_config(f"gatesPath: {bad!r}\n")


def test_a_gate_committed_in_a_source_folder_holds_everything(tools, tmp_path):
    from gitgate.passes.onepass import plan_checkout

    root = write_files(tmp_path, {
        "apps/app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        "apps/app/freeze.yaml": GATE})
    plan = plan_checkout(root, tools, NOW).plan
    assert [g.file for g in plan.invalid_gates] == ["apps/app"]
    assert "outside the gates folder" in plan.invalid_gates[0].message
    assert {str(b.verdict.verdict) for b in plan.bundles} == {"held"}


def test_a_file_swapped_for_a_link_after_the_scan_is_not_read(tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text("secret: outside\n")
    root = write_files(tmp_path / "repo", {"gates/g.yaml": "kind: Gate\n",
                                           "apps/a.yaml": "kind: ConfigMap\n"})
    tree = scan_repo(root)
    (root / "gates/g.yaml").unlink()
    (root / "gates/g.yaml").symlink_to(outside)
    assert tree.read("gates/g.yaml") is None
    assert tree.read_bytes("gates/g.yaml") is None
    (root / "apps").rename(root / "moved")
    (root / "apps").symlink_to(tmp_path)  # a parent folder swapped for a link
    assert tree.read("apps/a.yaml") is None


def test_a_file_saved_anew_after_the_scan_is_still_read(tmp_path):
    root = write_files(tmp_path / "repo", {"gates/g.yaml": "kind: Gate\n"})
    tree = scan_repo(root)
    (root / "gates/g.yaml").unlink()
    (root / "gates/g.yaml").write_text("kind: Gate # saved again\n")  # a new inode
    assert tree.read("gates/g.yaml") == "kind: Gate # saved again\n"


def test_a_fifo_in_the_repo_is_not_read_and_does_not_block(tmp_path):
    root = write_files(tmp_path / "repo", {"gates/g.yaml": "kind: Gate\n"})
    os.mkfifo(root / "gates/pipe.yaml")
    tree = scan_repo(root)
    assert tree.read("gates/pipe.yaml") is None
