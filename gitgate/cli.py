"""Command line: thin wrappers that read arguments, call the stages, print results."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path
from typing import Any

from gitgate.bundle.group import Bundle, group_all
from gitgate.errors import GitgateError
from gitgate.model import Problem
from gitgate.render.pipeline import RepoRender, render_repo
from gitgate.render.tools import find_tools
from gitgate.yamlio import dump_all


def _add_tool_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--helm", help="helm executable (default: $GITGATE_HELM, PATH, venv)")
    parser.add_argument("--kustomize",
                        help="kustomize or kubectl executable (default: $GITGATE_KUSTOMIZE, PATH)")


def render_path(args: argparse.Namespace) -> RepoRender:
    root = Path(args.path)
    if not root.is_dir():
        raise GitgateError(f"{root} is not a folder; pass the repo to render")
    tools = find_tools(args.helm, args.kustomize)
    return render_repo(root, tools)


def _selected(bundles: list[Bundle], pattern: str | None) -> list[Bundle]:
    return [b for b in bundles if pattern is None or fnmatch.fnmatchcase(b.name, pattern)]


def print_problems(problems: list[Problem], warnings: list[Problem] = ()) -> None:  # type: ignore[assignment]
    for warning in warnings:
        print(f"warning: {warning.location()}: {warning.message}", file=sys.stderr)
    for problem in problems:
        print(f"error: {problem.location()}: [{problem.reason}] {problem.message}",
              file=sys.stderr)


def cmd_render(args: argparse.Namespace) -> int:
    result = render_path(args)
    bundles = _selected(group_all(result.rendered), args.bundle)
    problems = [p for p in result.problems
                if args.bundle is None or any(b.source.path == p.source for b in bundles)]
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
    print_problems(problems, list(result.warnings))
    return 1 if problems else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gitgate", description="GitOps for Karmada, with "
                                     "pause gates committed in Git.")
    sub = parser.add_subparsers(dest="command", required=True)

    render = sub.add_parser("render", help="render every source of a repo into objects")
    render.add_argument("path")
    render.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    render.add_argument("--bundle", help="only bundles whose name matches this glob")
    _add_tool_flags(render)
    render.set_defaults(func=cmd_render)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except GitgateError as exc:
        print(f"error: [{exc.reason}] {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
