"""Cold-apply turns of one plan, each on a freshly started Karmada harness, by variant: what
part of gitgate's turn its records are (issue 31, item 4). A measuring tool, not a test: the
variants other than `gitgate` and `kubectl` switch parts of gitgate's pass off.

    GITGATE_TEST_KUBECONFIG=<state>/karmada.kubeconfig KARMADA_SRC=<karmada git dir> \\
        .venv/bin/python bench/turns_ab.py --bundles 200 --variants kubectl,gitgate --rounds 3

Variants: `kubectl` (the bench's kubectl file), `gitgate` (the pass as it is), `c<N>` (the
pass with N writes in flight), `status-ahead` (a new bundle's write-ahead record as a Bundle
creation and a status write, as before 2026-11-27), `no-records` (no write-ahead, no final
record, no event: a lower bound, not a pass gitgate would make), `warn` (applies without a
fieldValidation directive, the server's default Warn), `ninth` (a new bundle's intent as a
map per object, and events applied, not created). Rounds interleave the variants, so a
drift of the machine spreads over all of them. One JSON row per turn. To compare two trees
(two HTTP stacks, say), `bench/trees_ab.py` runs this script in each, round by round.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import (  # noqa: E402
    T0,
    Turn,
    binding_count,
    cold_pass,
    find_kubectl,
    fresh_harness,
    kubectl_apply,
    write_repo,
)


def main(argv: list[str] | None = None) -> int:
    from gitgate.apiserver import verbs
    from gitgate.apply import engine, ledger, recordformat
    from gitgate.apply.ledger import Ledger
    from gitgate.apply.work import ApplyOptions
    from gitgate.passes.onepass import plan_rendered, with_origin
    from gitgate.render.pipeline import render_repo
    from gitgate.render.tools import find_tools

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundles", type=int, default=200)
    parser.add_argument("--variants", default="kubectl,gitgate,status-ahead,no-records")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    kubeconfig = os.environ.get("GITGATE_TEST_KUBECONFIG")
    if not kubeconfig:
        parser.error("set GITGATE_TEST_KUBECONFIG to the harness's karmada.kubeconfig")
    kubectl = find_kubectl(required=True)
    assert kubectl is not None
    scratch = Path(tempfile.mkdtemp(prefix="gitgate-ab-"))
    write_repo(scratch / "repo", args.bundles, "gg")
    plan = plan_rendered(render_repo(scratch / "repo", find_tools()), T0)
    as_built = (engine.record_intent, engine.write_inventories, Ledger.write_ahead,
                verbs.APPLY_FIELD_VALIDATION, recordformat.intent_id, ledger.create)
    rows: list[dict] = []
    for _, variant in itertools.product(range(args.rounds), args.variants.split(",")):
        (engine.record_intent, engine.write_inventories, Ledger.write_ahead,
         verbs.APPLY_FIELD_VALIDATION, recordformat.intent_id, ledger.create) = as_built
        concurrency = int(variant[1:]) if variant[:1] == "c" and variant[1:].isdigit() else 8
        if variant == "status-ahead":
            Ledger.write_ahead = Ledger.write  # type: ignore[method-assign]
        elif variant == "warn":
            verbs.APPLY_FIELD_VALIDATION = "Warn"
        elif variant == "ninth":
            recordformat.intent_id = lambda entry: None  # type: ignore[assignment]
            ledger.create = lambda cluster, obj: cluster.apply(obj)  # type: ignore[assignment]
        elif variant == "no-records":
            engine.record_intent = lambda *a, **k: None  # type: ignore[assignment]
            engine.write_inventories = lambda *a, **k: 0  # type: ignore[assignment]
        cluster, counter, processes = fresh_harness(kubeconfig)
        turn = Turn(processes, children=variant == "kubectl",
                    count_bindings=lambda cluster=cluster: binding_count(cluster))
        began = time.perf_counter()
        if variant == "kubectl":
            kubectl_apply(kubectl, kubeconfig, plan, "gg", "kc", scratch, False)
        else:
            options = with_origin(ApplyOptions(
                now=T0, instance=uuid.uuid4().hex[:6], force_conflicts=True,
                resync=timedelta(hours=1), concurrency=concurrency), scratch / "repo")
            if not cold_pass(plan, cluster, options).ok:
                raise SystemExit(f"{variant}: the cold apply failed")
        wall = time.perf_counter() - began
        done = turn.done()
        rows.append({"variant": variant, "wall_s": round(wall, 2),
                     "requests": counter.requests if variant != "kubectl" else None,
                     "client_cpu_s": done["client_cpu_s"],
                     "server_cpu_s": done["server_cpu_s"], "server": done["server"],
                     "idle_share": done["idle_share"], "bindings_made": done["bindings_made"]})
        print(json.dumps(rows[-1]), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
