"""The apply engine run as its caller runs it: over the records as read now, written through
one `Ledger`."""

from __future__ import annotations

import threading
from collections.abc import Callable

from gitgate.apiserver.ports import ClusterPort
from gitgate.apply import engine
from gitgate.apply.ledger import Ledger, read_inventories, stored_of
from gitgate.apply.work import ApplyOptions, PassResult
from gitgate.plan import Plan
from gitgate.timespec import rfc3339


def run_pass(plan: Plan, cluster: ClusterPort, options: ApplyOptions,
             scope: Callable[[str], bool] | None = None,
             stop: threading.Event | None = None, keep_inventories: bool = False) -> PassResult:
    inventories = read_inventories(cluster, options.instance)
    ledger = Ledger(dict(inventories) if keep_inventories else {}, keep_inventories,
                    stored=stored_of(inventories), now=rfc3339(options.now),
                    origin=options.origin)
    return engine.run_pass(plan, cluster, options, ledger, inventories, scope=scope, stop=stop,
                           keep_inventories=keep_inventories)
