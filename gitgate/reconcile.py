"""One reconcile pass: render -> plan -> apply, each failure with its own reason."""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from pathlib import Path

from gitgate.apply.engine import ApplyOptions, ClusterPort, PassResult, run_pass
from gitgate.offline import plan_from_render
from gitgate.plan import Plan
from gitgate.render.pipeline import render_repo
from gitgate.render.tools import Tools


def reconcile_once(root: Path, tools: Tools, cluster: ClusterPort, options: ApplyOptions,
                   bundle_glob: str | None = None) -> tuple[Plan, PassResult]:
    plan = plan_from_render(render_repo(root, tools), options.now)
    if bundle_glob is None:
        return plan, run_pass(plan, cluster, options)

    def selected(name: str) -> bool:
        return fnmatch.fnmatchcase(name, bundle_glob)

    plan = replace(plan, bundles=tuple(b for b in plan.bundles if selected(b.bundle.name)))
    return plan, run_pass(plan, cluster, options, scope=selected)
