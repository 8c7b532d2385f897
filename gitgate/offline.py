"""Compose the offline stages for the CLI: render a checkout, read its gates, plan."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from gitgate.gitops.repo import revision_of
from gitgate.plan import Plan, gate_files, make_plan
from gitgate.render.pipeline import RepoRender, render_repo
from gitgate.render.tools import Tools


def plan_from_render(result: RepoRender, now: datetime) -> Plan:
    texts = gate_files(result.tree, result.discovery.config.gates_path)
    return make_plan(result.rendered, texts, now, revision_of(result.root), result.problems,
                     result.warnings)


def plan_repo(root: Path, tools: Tools, now: datetime) -> Plan:
    return plan_from_render(render_repo(root, tools), now)
