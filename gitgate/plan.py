"""Offline plan: render -> bundles -> gates -> verdicts -> policies. Pure over the rendered repo
and the gate files' text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gitgate.bundle.group import Bundle, group_all
from gitgate.gate.evaluate import BundleVerdict, GateState, evaluate, gate_states
from gitgate.gate.spec import InvalidGate, parse_gates
from gitgate.karmada.policy import generated_policies, with_suspension
from gitgate.model import Manifest, Problem, RenderedSource
from gitgate.source.discover import is_under
from gitgate.source.tree import RepoTree


@dataclass(frozen=True)
class BundlePlan:
    bundle: Bundle
    verdict: BundleVerdict
    desired: tuple[Manifest, ...]  # the objects to write when open (suspension applied)
    policies: tuple[Manifest, ...]


@dataclass(frozen=True)
class Plan:
    revision: str
    at: datetime
    bundles: tuple[BundlePlan, ...]
    gates: tuple[GateState, ...]
    invalid_gates: tuple[InvalidGate, ...]
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...] = ()


def gate_files(tree: RepoTree, gates_path: str) -> dict[str, str | None]:
    """Text of every YAML file under the gates folder; a symlink leaving the repo reads as
    None (an unreadable gate, which holds everything)."""
    files: dict[str, str | None] = {f: tree.read(f) for f in tree.files
                                    if is_under(f, gates_path) and f.endswith((".yaml", ".yml"))}
    for link in tree.escaping_links:
        if is_under(link, gates_path):
            files[link] = None
    return files


def make_plan(rendered: tuple[RenderedSource, ...], gate_texts: dict[str, str | None],
              now: datetime, revision: str, problems: tuple[Problem, ...] = (),
              warnings: tuple[Problem, ...] = ()) -> Plan:
    bundles = group_all(rendered)
    gates, invalid = parse_gates(gate_texts)
    verdicts = evaluate(bundles, gates, invalid, now)
    plans = []
    for bundle in bundles:
        verdict = verdicts[bundle.name]
        policies = generated_policies(bundle, bundle.source.options.placement, verdict)
        desired = with_suspension(bundle.objects, verdict)
        plans.append(BundlePlan(bundle, verdict, tuple(desired), tuple(policies)))
    return Plan(revision, now, tuple(plans), tuple(gate_states(gates, bundles, now)),
                tuple(invalid), problems, warnings)
