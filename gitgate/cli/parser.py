"""The `gitgate` argument parser: one sub-command family per module of this package."""

from __future__ import annotations

import argparse

from gitgate.cli import cluster, gitops, repo, run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gitgate", description="GitOps for Karmada, with pause gates committed in Git.")
    sub = parser.add_subparsers(dest="command", required=True)
    for family in (repo, cluster, gitops, run):
        family.register(sub)
    return parser
