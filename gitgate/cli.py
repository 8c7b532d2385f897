"""Command line: parse arguments and hand over to the command functions."""

from __future__ import annotations

import argparse
import sys

from gitgate import commands
from gitgate.errors import GitgateError
from gitgate.gitops import commands as git_commands
from gitgate.run_command import add_run_parser


def _tool_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--helm", help="helm executable (default: $GITGATE_HELM, PATH, venv)")
    parser.add_argument("--kustomize",
                        help="kustomize or kubectl executable (default: $GITGATE_KUSTOMIZE, PATH)")


def _at_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--at", help="evaluate gates at this RFC 3339 time (default: now)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gitgate", description="GitOps for Karmada, with pause gates committed in Git.")
    sub = parser.add_subparsers(dest="command", required=True)

    render = sub.add_parser("render", help="render every source of a repo into objects")
    render.add_argument("path")
    render.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    render.add_argument("--bundle", help="only bundles whose name matches this glob")
    render.add_argument("--show-secrets", action="store_true",
                        help="print Secret values (redacted by default)")
    _tool_flags(render)
    render.set_defaults(func=commands.cmd_render)

    plan = sub.add_parser("plan", help="what gitgate would do with each bundle, and why")
    plan.add_argument("path")
    plan.add_argument("-o", "--output", choices=["table", "json"], default="table")
    plan.add_argument("--bundle", help="only bundles whose name matches this glob")
    _at_flag(plan)
    _tool_flags(plan)
    _kube_flags(plan, required=False)
    plan.set_defaults(func=commands.cmd_plan)

    apply = sub.add_parser("apply", help="one pass against the Karmada API (for CI pipelines)")
    apply.add_argument("path")
    apply.add_argument("--once", action="store_true", help="accepted for clarity: one pass")
    apply.add_argument("--dry-run", action="store_true", help="server-side dry run, no writes")
    apply.add_argument("--bundle", help="only bundles whose name matches this glob")
    apply.add_argument("--force-conflicts", action="store_true",
                       help="take over fields another field manager owns")
    apply.add_argument("--allow-mass-prune", action="store_true",
                       help="allow a pass to delete more than half of what gitgate manages")
    apply.add_argument("--resync", default="10m", help="re-apply unchanged objects this often")
    apply.add_argument("--suspension-timeout", default="30s",
                       help="how long to wait for Karmada to show a suspension before writing "
                            "a suspended bundle's templates (none are written if it does not)")
    apply.add_argument("-o", "--output", choices=["table", "json"], default="table")
    _tool_flags(apply)
    _kube_flags(apply, required=True)
    apply.set_defaults(func=commands.cmd_apply)

    status = sub.add_parser("status", help="what gitgate last did with each bundle")
    status.add_argument("-o", "--output", choices=["table", "json"], default="table")
    _kube_flags(status, required=True)
    status.set_defaults(func=commands.cmd_status)

    gates = sub.add_parser("gates", help="every gate: active or not, what it covers, when next")
    gates.add_argument("path")
    gates.add_argument("-o", "--output", choices=["table", "json"], default="table")
    _at_flag(gates)
    _tool_flags(gates)
    gates.set_defaults(func=commands.cmd_gates)

    check = sub.add_parser("check", help="validate a repo for CI: render, gates, bundle.yaml")
    check.add_argument("path")
    check.add_argument("--junit", help="write a JUnit XML report to this file")
    check.add_argument("-o", "--output", choices=["text", "json"], default="text")
    _tool_flags(check)
    check.set_defaults(func=commands.cmd_check)

    pause = sub.add_parser("pause", help="commit a gate that holds the selected bundles")
    pause.add_argument("selector", help="bundle name glob (shop/*) or labels (team=payments)")
    pause.add_argument("--reason", required=True)
    until = pause.add_mutually_exclusive_group()
    until.add_argument("--until", help="lift the gate at this RFC 3339 time")
    until.add_argument("--for", dest="duration", help="lift the gate after this long (2h, 1d)")
    pause.add_argument("--action", choices=["hold", "suspend"], default="hold")
    pause.add_argument("--clusters", help="suspend only these member clusters (a,b)")
    _git_flags(pause)
    pause.set_defaults(func=git_commands.cmd_pause)

    resume = sub.add_parser("resume", help="commit the removal of the gates covering a bundle")
    resume.add_argument("selector", help="a gate name, or a bundle name glob or labels")
    _git_flags(resume)
    resume.set_defaults(func=git_commands.cmd_resume)

    approve = sub.add_parser("approve", help="let the current content of a held bundle through")
    approve.add_argument("bundle")
    _git_flags(approve)
    approve.set_defaults(func=git_commands.cmd_approve)
    add_run_parser(sub)
    return parser


def _kube_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """`required`: the command always talks to the API server (else only when asked to)."""
    default = "$KUBECONFIG, ~/.kube/config, in-cluster" if required else "offline"
    parser.add_argument("--kubeconfig",
                        help=f"kubeconfig of the Karmada API server (default: {default})")
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--instance", default="default",
                        help="name of this gitgate when several share one API server")


def _git_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", default=".", help="the gitgate repo folder (default: .)")
    parser.add_argument("--push", action="store_true", help="push the commit to origin")
    _tool_flags(parser)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except GitgateError as exc:
        where = f" ({exc.file}{':' + str(exc.line) if exc.line else ''})" if exc.file else ""
        print(f"error: [{exc.reason}] {exc.message}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
