"""`rollout` in bundle.yaml: waves by name or by cluster label selector, and clear errors."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gitgate.errors import ConfigError
from gitgate.model.rolloutspec import ClusterSelector, Requirement, Wave
from gitgate.source.config import RepoConfig, parse_bundle_options


def rollout_of(text: str):
    return parse_bundle_options("name: web\nrollout:\n" + text, "web/bundle.yaml",
                                RepoConfig()).rollout


def test_waves_by_name_and_by_label_selector():
    spec = rollout_of("  waves:\n"
                      "    - labelSelector: {matchLabels: {stage: canary}}\n"
                      "    - labelSelector:\n"
                      "        matchExpressions: [{key: stage, operator: NotIn, "
                      "values: [canary]}, {key: zone, operator: Exists}]\n"
                      "    - clusters: [member9]\n"
                      "  bake: 30s\n")
    assert spec.waves == (
        Wave(selector=ClusterSelector((("stage", "canary"),))),
        Wave(selector=ClusterSelector(match_expressions=(
            Requirement("stage", "NotIn", ("canary",)), Requirement("zone", "Exists")))),
        Wave(("member9",)))
    assert spec.bake == timedelta(seconds=30) and spec.selects
    assert spec.as_dict()["waves"][0] == {"labelSelector": {"matchLabels": {"stage": "canary"}}}


@pytest.mark.parametrize(("waves", "message"), [
    ("[{clusters: [a], labelSelector: {matchLabels: {x: y}}}]",
     "rollout.waves[0] must be {clusters: [member cluster names]} or {labelSelector"),
    ("[{labelSelector: {}}]", "rollout.waves[0].labelSelector must be a mapping"),
    ("[{labelSelector: {matchLabels: {}}}]",
     "rollout.waves[0].labelSelector selects nothing"),
    ("[{labelSelector: {matchExpressions: [{key: a, operator: Near, values: [b]}]}}]",
     "rollout.waves[0].labelSelector.matchExpressions[0].operator must be one of In, NotIn, "
     "Exists, DoesNotExist, not 'Near'"),
    ("[{labelSelector: {matchExpressions: [{key: a, operator: In}]}}]",
     "matchExpressions[0]: In needs values"),
    ("[{labelSelector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}}]",
     "matchExpressions[0]: Exists takes no values"),
    ("[{labelSelector: {matchLabel: {a: b}}}]", "unknown field(s) rollout.waves[0]."
     "labelSelector.matchLabel"),
    ("[{clusters: [a]}, {clusters: [b, a]}]", "rollout.waves[1]: cluster(s) a already in an "
     "earlier wave"),
])
def test_a_bad_wave_names_the_file_and_the_field(waves, message):
    with pytest.raises(ConfigError) as caught:
        rollout_of(f"  waves: {waves}\n")
    assert message in caught.value.message
    assert caught.value.file == "web/bundle.yaml"
