"""The `gitgate` argument parser: one sub-command family per module of this package."""

from __future__ import annotations

import argparse
from typing import Any

from gitgate.cli import (
    cluster,
    commits,
    describe,
    info,
    lock,
    offline,
    reconcile,
    remove,
    run,
    ui,
)
from gitgate.cli.flags import HelpFormatter

EXAMPLES = """examples:
  gitgate plan examples/repo                    what would be applied or held, and why
  gitgate check examples/repo --junit out.xml   CI: fail on broken sources or gates
  gitgate apply examples/repo --once            CI: one pass against Karmada
  gitgate pause 'shop/*' --reason INC-42 --for 2h --push
  gitgate resume 'shop/*' --push
  gitgate status                                what gitgate last did with each bundle
  gitgate describe shop/web                     one bundle: gates, clusters, history, events
  gitgate delete shop/web --dry-run             what deleting a bundle from the cluster does
  gitgate run --repo https://github.com/acme/fleet.git
  gitgate ui --kubeconfig karmada.config        the read-only web page, on this machine
"""


class _CommandParser(argparse.ArgumentParser):
    """Every sub-command shows its flags' defaults and keeps its examples' line breaks."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gitgate", description="GitOps for Karmada, with pause gates committed in Git.",
        formatter_class=HelpFormatter, epilog=EXAMPLES)
    parser.add_argument("--version", action=info.VersionAction)
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND",
        parser_class=_CommandParser)
    for family in (offline, lock, cluster, describe, commits, reconcile, remove, run, ui, info):
        family.register(sub)
    return parser
