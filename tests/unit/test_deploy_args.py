"""The shipped Deployment runs what gitgate accepts: its arguments parse, and a sharded
Deployment expects as many replicas as it runs (else the first one up does the whole cold
start alone, or the others wait a lease duration for a replica that never comes)."""

from __future__ import annotations

from gitgate.cli.parser import build_parser
from gitgate.yamlio import load_documents
from tests.conftest import REPO_ROOT


def test_the_deployment_parses_and_expects_its_own_replicas():
    path = REPO_ROOT / "deploy" / "base" / "deployment.yaml"
    (deployment,) = [d.data for d in load_documents(path.read_text())
                     if d.data.get("kind") == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.shard
    assert args.expect_replicas == deployment["spec"]["replicas"] == 2
