"""Commands against the Karmada API server: `apply` (one pass, for CI) and `status`."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from gitgate.apply.engine import ApplyOptions, read_inventories
from gitgate.cli.flags import (
    bundle_flag,
    kube_flags,
    output_flag,
    path_arg,
    suspension_timeout_flag,
    tool_flags,
)
from gitgate.cli.kube import cluster_from
from gitgate.cli.repo import repo_folder, warn_if_empty
from gitgate.output import console
from gitgate.output.status import pass_document, pass_table, status_document, status_table
from gitgate.pipeline import reconcile
from gitgate.render.tools import find_tools
from gitgate.timespec import duration_flag


def register(sub: argparse._SubParsersAction) -> None:
    apply = sub.add_parser(
        "apply", help="one pass against the Karmada API (for CI pipelines)",
        epilog="examples:\n  gitgate apply examples/repo --once --kubeconfig karmada.config\n"
               "  gitgate apply examples/repo --dry-run -o json\n"
               "exit codes: 0 all applied or held, 1 a bundle or source failed, 2 the pass "
               "could not run (flags, kubeconfig, API server unreachable or refusing)")
    path_arg(apply)
    apply.add_argument("--once", action="store_true", help="accepted for clarity: one pass")
    apply.add_argument("--dry-run", action="store_true", help="server-side dry run, no writes")
    bundle_flag(apply)
    apply.add_argument("--force-conflicts", action="store_true",
                       help="take over fields another field manager owns")
    apply.add_argument("--allow-mass-prune", action="store_true",
                       help="allow a pass to delete more than half of what gitgate manages")
    apply.add_argument("--resync", default="10m", help="re-apply unchanged objects this often")
    suspension_timeout_flag(apply)
    output_flag(apply, "table", "json")
    tool_flags(apply)
    kube_flags(apply, required=True)
    apply.set_defaults(func=cmd_apply)

    status = sub.add_parser("status", help="what gitgate last did with each bundle",
                            epilog="examples:\n  gitgate status --kubeconfig karmada.config\n"
                                   "  gitgate status -o json | jq '.bundles[].verdict'")
    output_flag(status, "table", "wide", "json")
    kube_flags(status, required=True)
    status.set_defaults(func=cmd_status)


def cmd_apply(args: argparse.Namespace) -> int:
    options = ApplyOptions(
        now=datetime.now(UTC), dry_run=args.dry_run, force_conflicts=args.force_conflicts,
        allow_mass_prune=args.allow_mass_prune, resync=duration_flag(args.resync, "--resync"),
        instance=args.instance,
        suspension_timeout=duration_flag(args.suspension_timeout, "--suspension-timeout"))
    root = repo_folder(args)
    plan, result = reconcile(root, find_tools(args.helm, args.kustomize), cluster_from(args),
                             options, bundle_glob=args.bundle)
    warn_if_empty(root, plan)
    if args.output == "json":
        console.out_json(pass_document(result))
    else:
        console.out(pass_table(result))
    console.problems(plan.problems, plan.warnings)
    return 0 if result.ok and not plan.problems else 1


def cmd_status(args: argparse.Namespace) -> int:
    inventories = list(read_inventories(cluster_from(args), args.instance).values())
    if args.output == "json":
        console.out_json(status_document(inventories))
    else:
        console.out(status_table(inventories, datetime.now(UTC),
                                 wide=args.output == "wide"))
    return 0
