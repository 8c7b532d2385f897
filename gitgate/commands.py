"""The offline commands: render, plan, gates, check."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitgate.bundle.group import Bundle, group_all
from gitgate.check import check_report, junit_xml
from gitgate.errors import ConfigError, GitgateError
from gitgate.gate.spec import GateSpecError, parse_time
from gitgate.model import Problem
from gitgate.offline import plan_from_render
from gitgate.render.pipeline import RepoRender, render_repo
from gitgate.render.tools import find_tools
from gitgate.report import gates_document, gates_table, plan_document, plan_table
from gitgate.yamlio import dump_all


def render_path(args: argparse.Namespace) -> RepoRender:
    root = Path(args.path)
    if not root.is_dir():
        raise GitgateError(f"{root} is not a folder; pass the repo to render")
    return render_repo(root, find_tools(args.helm, args.kustomize))


def at_time(args: argparse.Namespace) -> datetime:
    if not getattr(args, "at", None):
        return datetime.now(UTC)
    try:
        return parse_time(args.at, "--at")
    except GateSpecError as exc:
        raise ConfigError(str(exc)) from None


def _selected(bundles: list[Bundle], pattern: str | None) -> list[Bundle]:
    return [b for b in bundles if pattern is None or fnmatch.fnmatchcase(b.name, pattern)]


def print_problems(problems: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
    for warning in warnings:
        print(f"warning: {warning.location()}: {warning.message}", file=sys.stderr)
    for problem in problems:
        print(f"error: {problem.location()}: [{problem.reason}] {problem.message}",
              file=sys.stderr)


def cmd_render(args: argparse.Namespace) -> int:
    result = render_path(args)
    bundles = _selected(group_all(result.rendered), args.bundle)
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
    plan = plan_from_render(render_path(args), at_time(args))
    if args.bundle:
        plan = replace(plan, bundles=tuple(b for b in plan.bundles
                                           if fnmatch.fnmatchcase(b.bundle.name, args.bundle)))
    if args.output == "json":
        print(json.dumps(plan_document(plan), indent=2))
    else:
        sys.stdout.write(plan_table(plan))
    return 1 if plan.problems or plan.invalid_gates else 0


def cmd_gates(args: argparse.Namespace) -> int:
    plan = plan_from_render(render_path(args), at_time(args))
    if args.output == "json":
        print(json.dumps(gates_document(plan), indent=2))
    else:
        sys.stdout.write(gates_table(plan))
    return 1 if plan.invalid_gates else 0


def cmd_check(args: argparse.Namespace) -> int:
    result = render_path(args)
    report = check_report(result, plan_from_render(result, datetime.now(UTC)))
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
