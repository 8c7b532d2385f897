"""Rendering per shard with the real helm and kustomize: on the example repo (a Helm chart, a
kustomize overlay, a split raw source, namespaces, overrides acting on another team's bundle,
gates), a replica that keeps the other replicas' sources as summaries plans its own bundles
exactly as a replica planning the whole repo does, for every way of splitting the sources."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitgate.model.shardmap import unit_of
from gitgate.passes.onepass import plan_checkout
from gitgate.render.cache import RenderCache
from tests.conftest import EXAMPLES
from tests.support.democharts import example_fetcher

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def planned(root: Path, tools, charts, shard=None, cache=None):
    return plan_checkout(root, tools, NOW, revision="r1", shard=shard, cache=cache,
                         charts=charts)


def essence(plan, mine=None) -> dict:
    return {"bundles": {item.bundle.name: item for item in plan.bundles
                        if mine is None or unit_of(item.bundle.name) in mine},
            "gates": plan.gates, "invalid": plan.invalid_gates,
            "problems": set(plan.problems), "warnings": set(plan.warnings)}


def test_every_split_of_the_example_repo_plans_as_the_whole(tools, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    charts = example_fetcher(tmp_path / "charts")  # apps/echo's published chart
    whole = planned(root, tools, charts).plan
    every = {unit_of(item.bundle.name) for item in whole.bundles}
    assert len(every) >= 4 and any(item.bundle.overridden_by for item in whole.bundles)
    for unit in sorted(every):
        for mine in ({unit}, every - {unit}):
            def shard(name: str, mine: set[str] = mine) -> bool:
                return unit_of(name) in mine
            cache = RenderCache()
            checkout = planned(root, tools, charts, shard, cache)
            assert essence(checkout.plan) == essence(whole, mine), (unit, mine)
            kept = [r for r in checkout.rendered.rendered
                    if unit_of(r.source.bundle_name) not in mine and not r.failed]
            assert kept and all(r.summary is not None for r in kept)
            misses = cache.misses
            again = planned(root, tools, charts, shard, cache)  # summaries from the cache
            assert cache.misses == 0 < misses
            assert essence(again.plan) == essence(whole, mine), (unit, mine)
