"""The offline commands: render, plan, gates, check."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gitgate.apply.changeset import Action
from gitgate.apply.engine import ApplyOptions, ClusterPort, read_inventories
from gitgate.apply.livediff import live_diff
from gitgate.bundle.group import Bundle, group_all
from gitgate.check import check_report, junit_xml
from gitgate.errors import ConfigError, GitgateError
from gitgate.gate.spec import GateSpecError, parse_duration, parse_time
from gitgate.model import Problem
from gitgate.pipeline import Checkout, matches, plan_checkout, reconcile
from gitgate.render.pipeline import RepoRender, render_repo
from gitgate.render.post import redact_secret
from gitgate.render.tools import find_tools
from gitgate.report import gates_document, gates_table, plan_document, plan_table, table
from gitgate.status.report import (
    dumps,
    pass_document,
    pass_table,
    status_document,
    status_table,
)
from gitgate.yamlio import dump_all


def _repo_folder(args: argparse.Namespace) -> Path:
    root = Path(args.path)
    if not root.is_dir():
        raise GitgateError(f"{root} is not a folder; pass the repo (a folder) to {args.command}")
    return root


def render_path(args: argparse.Namespace) -> RepoRender:
    return render_repo(_repo_folder(args), find_tools(args.helm, args.kustomize))


def checkout(args: argparse.Namespace, now: datetime, bundle_glob: str | None = None) -> Checkout:
    return plan_checkout(_repo_folder(args), find_tools(args.helm, args.kustomize), now,
                         bundle_glob=bundle_glob)


def at_time(args: argparse.Namespace) -> datetime:
    if not getattr(args, "at", None):
        return datetime.now(UTC)
    try:
        return parse_time(args.at, "--at")
    except GateSpecError as exc:
        raise ConfigError(str(exc)) from None


def _selected(bundles: list[Bundle], pattern: str | None) -> list[Bundle]:
    return [b for b in bundles if matches(b.name, pattern)]


def print_problems(problems: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
    for warning in warnings:
        print(f"warning: {warning.location()}: {warning.message}", file=sys.stderr)
    for problem in problems:
        print(f"error: {problem.location()}: [{problem.reason}] {problem.message}",
              file=sys.stderr)


def cmd_render(args: argparse.Namespace) -> int:
    result = render_path(args)
    bundles = _selected(group_all(result.rendered), args.bundle)
    if not args.show_secrets:
        bundles = [replace(b, objects=tuple(redact_secret(o) for o in b.objects))
                   for b in bundles]
    sources = {b.source.path for b in bundles}
    problems = [p for p in result.problems if args.bundle is None or p.source in sources]
    if args.output == "json":
        doc: dict[str, Any] = {
            "bundles": [{"name": b.name,
                         "source": {"path": b.source.path, "kind": str(b.source.kind)},
                         "objects": list(b.objects)} for b in bundles if not b.failed],
            "errors": [p.as_dict() for p in problems],
        }
        print(json.dumps(doc, indent=2))
    else:
        documents: list[Any] = []
        comments: list[str | None] = []
        for bundle in bundles:
            for index, obj in enumerate(bundle.objects):
                documents.append(obj)
                comments.append(f"bundle {bundle.name} (source {bundle.source.path}, "
                                f"{bundle.source.kind})" if index == 0 else None)
        sys.stdout.write(dump_all(documents, comments))
    print_problems(problems, result.warnings)
    return 1 if problems else 0


def cmd_plan(args: argparse.Namespace) -> int:
    plan = checkout(args, at_time(args), args.bundle).plan
    changes = None
    if args.kubeconfig or args.context:
        changes = live_diff(plan, cluster_from(args), ApplyOptions(
            now=plan.at, instance=args.instance))
    if args.output == "json":
        doc = plan_document(plan)
        if changes is not None:
            for bundle in doc["bundles"]:
                bundle["changes"] = [c.as_dict() for c in changes if c.bundle == bundle["name"]]
        print(json.dumps(doc, indent=2))
    else:
        sys.stdout.write(plan_table(plan))
        if changes is not None:
            rows = [["BUNDLE", "ACTION", "OBJECT", "FIELDS"]] + [
                [c.bundle, c.action, str(c.ref), ", ".join(c.fields) or c.message or "-"]
                for c in changes]
            sys.stdout.write("\n" + table(rows) + "\n")
    failed = changes is not None and any(c.action is Action.FAILED for c in changes)
    return 1 if plan.problems or plan.invalid_gates or failed else 0


def cluster_from(args: argparse.Namespace) -> ClusterPort:
    from gitgate.apply.kube import KubeCluster, load_client  # the kubernetes client loads slowly
    return KubeCluster(load_client(args.kubeconfig, args.context))


def duration_flag(text: str, flag: str) -> timedelta:
    """A duration flag (`--resync 10m`), its error naming the flag."""
    try:
        return parse_duration(text)
    except GateSpecError as exc:
        raise ConfigError(f"{flag}: {exc}") from None


def cmd_apply(args: argparse.Namespace) -> int:
    resync = duration_flag(args.resync, "--resync")
    suspension_timeout = duration_flag(args.suspension_timeout, "--suspension-timeout")
    root = _repo_folder(args)
    options = ApplyOptions(now=datetime.now(UTC), dry_run=args.dry_run,
                           force_conflicts=args.force_conflicts,
                           allow_mass_prune=args.allow_mass_prune, resync=resync,
                           instance=args.instance, suspension_timeout=suspension_timeout)
    plan, result = reconcile(root, find_tools(args.helm, args.kustomize), cluster_from(args),
                             options, bundle_glob=args.bundle)
    if args.output == "json":
        print(dumps(pass_document(result)))
    else:
        sys.stdout.write(pass_table(result))
    print_problems(plan.problems, plan.warnings)
    return 0 if result.ok and not plan.problems else 1


def cmd_status(args: argparse.Namespace) -> int:
    inventories = list(read_inventories(cluster_from(args), args.instance).values())
    if args.output == "json":
        print(dumps(status_document(inventories)))
    else:
        sys.stdout.write(status_table(inventories))
    return 0


def cmd_gates(args: argparse.Namespace) -> int:
    plan = checkout(args, at_time(args)).plan
    if args.output == "json":
        print(json.dumps(gates_document(plan), indent=2))
    else:
        sys.stdout.write(gates_table(plan))
    return 1 if plan.invalid_gates else 0


def cmd_check(args: argparse.Namespace) -> int:
    current = checkout(args, datetime.now(UTC))
    result = current.rendered
    report = check_report(result, current.plan)
    if args.junit:
        Path(args.junit).write_text(junit_xml(report), encoding="utf-8")
    if args.output == "json":
        print(json.dumps({"ok": report.ok, "cases": [c.as_dict() for c in report.cases]},
                         indent=2))
    else:
        for case in report.cases:
            status = "ok" if not case.failures else "FAIL"
            print(f"{status:4}  {case.name}")
            for failure in case.failures:
                print(f"      {failure}")
        print(f"{report.passed} of {len(report.cases)} checks ok")
    print_problems((), result.warnings)
    return 0 if report.ok else 1
