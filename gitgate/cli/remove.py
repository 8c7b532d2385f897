"""`gitgate delete BUNDLE` (as `flux delete` or `argocd app delete --cascade`) and `gitgate
uninstall --instance NAME` (as `flux uninstall`): the objects gitgate applied, its records,
and for an instance its Leases and ConfigMaps (`passes.removal`)."""

from __future__ import annotations

import argparse

from gitgate.cli.flags import completes, kube_flags
from gitgate.cli.kube import cluster_from
from gitgate.errors import ConfigError
from gitgate.output import console
from gitgate.passes.bundleglob import selected
from gitgate.passes.leading import leadership
from gitgate.passes.onepass import ClusterPort
from gitgate.passes.recorded import recorded_instances
from gitgate.passes.removal import Removal, recorded_bundles, remove_bundles, remove_leftovers


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    delete = sub.add_parser(
        "delete", help="delete bundles from the cluster: their objects, then their records",
        epilog="examples:\n  gitgate delete shop/web --kubeconfig karmada.config --dry-run\n"
               "  gitgate delete 'shop/*' --kubeconfig karmada.config\n"
               "exit codes: 0 deleted (or, with --dry-run, what would be), 1 something stays "
               "(the mass-prune brake, an object that could not be deleted), 2 the command "
               "could not run")
    completes(delete.add_argument("bundle", help="the bundle (or a glob of bundles) as "
                                                 "`gitgate status` lists them"))
    _removal_flags(delete)
    delete.set_defaults(func=cmd_delete)

    uninstall = sub.add_parser(
        "uninstall", help="remove a gitgate instance: every bundle's objects and records, "
                          "its Leases and ConfigMaps",
        epilog="examples:\n  gitgate uninstall --instance quickstart --kubeconfig "
               "karmada.config --dry-run\n"
               "  gitgate uninstall --instance quickstart --kubeconfig karmada.config "
               "--allow-mass-prune\n"
               "Stop its `gitgate run` first: a running loop would apply everything again.")
    _removal_flags(uninstall)
    uninstall.set_defaults(func=cmd_uninstall)


def _removal_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would be deleted; read only")
    parser.add_argument("--allow-mass-prune", action="store_true",
                        help="allow deleting more than half of the objects the instance "
                             "manages (apply's brake)")
    kube_flags(parser, required=True)


def cmd_delete(args: argparse.Namespace) -> int:
    cluster = cluster_from(args)
    every = recorded_bundles(cluster, args.instance)
    if not every:
        raise ConfigError(_nothing_recorded(cluster, args.instance))
    names = set(selected([i.bundle for i in every], args.bundle, "delete"))
    chosen = [i for i in every if i.bundle in names]
    leads = leadership(cluster, args.instance, args.now())
    if leads.leading:
        console.warn(f"a `gitgate run` leads instance {args.instance} ({leads.said}): a "
                     "bundle still in its repo is applied again by its next pass; remove it "
                     "from Git (the loop then prunes it), or pause it, rather than delete it "
                     "here")
    done = remove_bundles(cluster, chosen, every, now=args.now(), dry_run=args.dry_run,
                          allow_mass_prune=args.allow_mass_prune)
    return _said(done, args.dry_run)


def cmd_uninstall(args: argparse.Namespace) -> int:
    cluster = cluster_from(args)
    leads = leadership(cluster, args.instance, args.now())
    if leads.leading:
        raise ConfigError(f"a `gitgate run` leads instance {args.instance} ({leads.said}): "
                          "it would apply everything again; stop it first (scale its "
                          "Deployment to 0), then uninstall")
    every = recorded_bundles(cluster, args.instance)
    done = remove_bundles(cluster, every, every, now=args.now(), dry_run=args.dry_run,
                          allow_mass_prune=args.allow_mass_prune)
    if not done.failed:  # the records stay until every bundle is gone, for a second try
        remove_leftovers(cluster, args.instance, dry_run=args.dry_run, done=done)
    if not done.lines and not done.blocked:
        raise ConfigError(_nothing_recorded(cluster, args.instance))
    return _said(done, args.dry_run)


def _said(done: Removal, dry_run: bool) -> int:
    for line in done.lines:
        console.out(line)
    if done.blocked:
        console.error_line(f"nothing was deleted: {done.blocked}")
    elif dry_run:
        console.out("(dry run: nothing deleted)")
    return 1 if done.failed else 0


def _nothing_recorded(cluster: ClusterPort, instance: str) -> str:
    others = [name for name in recorded_instances(cluster) if name != instance]
    where = (f"; instances with bundles here: {', '.join(others)} (pass --instance NAME)"
             if others else "")
    return f"no bundle is recorded for --instance {instance}{where}"
