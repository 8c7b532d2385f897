"""`gitgate get`, `describe` and `history`: the bundles' records (their Bundle objects) where
Kubernetes users look, read from the API server."""

from __future__ import annotations

import argparse

from gitgate.cli.flags import completes, kube_flags, output_flag
from gitgate.cli.kube import cluster_from
from gitgate.errors import ConfigError
from gitgate.karmada.dispatch import Dispatch
from gitgate.model.nearby import closest_hint
from gitgate.output import console
from gitgate.output.printers import Printable, show
from gitgate.output.recordviews import (
    describe_document,
    describe_text,
    get_document,
    get_table,
    history_document,
    history_table,
)
from gitgate.passes.onepass import selected
from gitgate.passes.recorded import Recorded, bundle_events, recorded_status
from gitgate.status.bundlestate import BundleState, bundle_states


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    get = sub.add_parser("get", help="the bundles' records, as `kubectl get bundles.gitgate.io` "
                                     "shows them",
                         epilog="examples:\n  gitgate get --kubeconfig karmada.config\n"
                                "  gitgate get 'shop/*' -o wide")
    completes(get.add_argument("bundle", nargs="?", help="only bundles whose name matches "
                                                         "this glob"))
    output_flag(get, "table", "wide", "json")
    kube_flags(get, required=True)
    get.set_defaults(func=cmd_get)

    for name, text, func, shown in (
            ("describe", "everything known of one bundle: objects, gates, clusters, "
                         "conditions, history, events", cmd_describe, "text"),
            ("history", "a bundle's last applies: revision, when, outcome, by the loop or "
                        "the CLI", cmd_history, "table")):
        command = sub.add_parser(name, help=text)
        completes(command.add_argument("bundle", help="the bundle's name"))
        output_flag(command, shown, "json")
        kube_flags(command, required=True)
        command.set_defaults(func=func)


def _recorded(args: argparse.Namespace) -> Recorded:
    return recorded_status(cluster_from(args), args.instance)


def _one(recorded: Recorded, name: str) -> int:
    for index, inv in enumerate(recorded.inventories):
        if inv.bundle == name:
            return index
    known = [inv.bundle for inv in recorded.inventories]
    raise ConfigError(f"no bundle {name!r} is recorded{closest_hint(name, known)}")


def cmd_get(args: argparse.Namespace) -> int:
    recorded = _recorded(args)
    inventories = recorded.inventories
    if args.bundle is not None and inventories:
        chosen = set(selected([i.bundle for i in inventories], args.bundle, "get"))
        inventories = [i for i in inventories if i.bundle in chosen]
    states = bundle_states(inventories, dict(recorded.observation.bundles))
    show(args.output, Printable(lambda: get_document(states),
                                lambda wide: get_table(states, args.now(), wide=wide)))
    if recorded.observation.error:
        console.warn(recorded.observation.error)
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    cluster = cluster_from(args)
    recorded = recorded_status(cluster, args.instance)
    inv = recorded.inventories[_one(recorded, args.bundle)]
    state = BundleState.of(inv, recorded.observation.bundles.get(inv.bundle, Dispatch()))
    events = bundle_events(cluster, inv)
    show(args.output, Printable(lambda: describe_document(state, events),
                                lambda _wide: describe_text(state, events, args.now())))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    recorded = _recorded(args)
    inv = recorded.inventories[_one(recorded, args.bundle)]
    show(args.output, Printable(lambda: history_document(inv),
                                lambda _wide: history_table(inv, args.now())))
    return 0
