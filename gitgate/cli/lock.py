"""`gitgate lock [PATH]`: resolve the charts sources fetch (bundle.yaml `helm:`, Chart.yaml
dependencies from a chart repository or an oci:// registry) and write each source's
chart.lock.yaml; and the chart store the offline commands fetch into."""

from __future__ import annotations

import argparse
from pathlib import Path

from gitgate.charts.credentials import cluster_secrets
from gitgate.charts.locking import lock_repo
from gitgate.charts.stage import ChartFetcher
from gitgate.charts.store import ChartStore, default_chart_cache
from gitgate.errors import ConfigError
from gitgate.output import console
from gitgate.passes.onepass import SYSTEM_NAMESPACE, ClusterPort
from gitgate.source.config import RepoConfig


def chart_fetcher(cluster: ClusterPort | None = None,
                  in_force: RepoConfig | None = None) -> ChartFetcher:
    """The fetch stage of a command run by hand (its store: `default_chart_cache`); Secrets
    named as credentials are read when a cluster is given. `in_force`: gitgate.yaml as the
    trusted revision has it, when the checkout's own does not count (`--since`)."""
    get = getattr(cluster, "get", None)
    return ChartFetcher(ChartStore(default_chart_cache()), secret_reader=cluster_secrets(
        get, SYSTEM_NAMESPACE) if get is not None else None,
        in_force=(in_force.charts, in_force.tenancy) if in_force is not None else None)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lock = sub.add_parser(
        "lock", help="resolve fetched charts to a version and digest: write chart.lock.yaml",
        epilog="examples:\n  gitgate lock examples/repo\n"
               "  gitgate lock examples/repo --only apps/podinfo --upgrade")
    lock.add_argument("path", help="the gitgate repo folder (holding gitgate.yaml)")
    lock.add_argument("--only", default=".", metavar="FOLDER",
                      help="lock the sources in this folder of the repo only")
    lock.add_argument("--upgrade", action="store_true",
                      help="resolve every range again (default: a chart whose lock still "
                           "asks for the same range keeps its locked version)")
    lock.set_defaults(func=cmd_lock)


def cmd_lock(args: argparse.Namespace) -> int:
    root = Path(args.path)
    if not (root / "gitgate.yaml").is_file():
        raise ConfigError(f"{root} holds no gitgate.yaml: its charts.repositories say where "
                          "charts may come from, and nothing is fetched without it")
    done, problems = lock_repo(root, chart_fetcher(), under=args.only.strip("/") or ".",
                               upgrade=args.upgrade)
    for locked in done:
        charts = ", ".join(f"{e.dependency or e.ref.chart} {e.version}" for e in locked.entries)
        state = "written" if locked.changed else "unchanged"
        console.out(f"{locked.file}: {charts or 'no charts (removed)'} ({state})")
    console.problems(problems)
    return 1 if problems else 0
