"""Cold-apply turns of two source trees of gitgate, round by round, each turn on a freshly
started Karmada harness: `bench/turns_ab.py --variants gitgate --rounds 1` run in one tree,
then in the other, `--rounds` times, so a drift of the machine spreads over both. A
measuring tool, not a test. Each tree runs with its own code (and its own turns_ab.py).

    GITGATE_TEST_KUBECONFIG=<state>/karmada.kubeconfig KARMADA_SRC=<karmada git dir> \\
        .venv/bin/python bench/trees_ab.py --tree before=/tmp/gg-before --tree after=. \\
        --rounds 5 --json bench/results/trees-ab.json

With `--kubectl`, each round also has a turn of the bench's kubectl file (turns_ab.py's
`kubectl` variant, run in the last tree), as tree `kubectl`, and the summary gives each
tree's median turn over kubectl's.

The JSON holds every turn (`tree`, `wall_s`, `client_cpu_s`, `server_cpu_s`, `load`: the
machine's /proc/loadavg when the turn began, ...) and, per tree, the median and range of the
turn and of the client's CPU."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    """The machine's load averages (1, 5 and 15 minutes)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def turn(tree: Path, bundles: int, variant: str = "gitgate") -> dict:
    """One turn of `variant` in `tree`: its turns_ab.py's one row."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "KARMADA_HARNESS": os.environ.get(
            "KARMADA_HARNESS", str(ROOT.parent / "shared" / "karmada-harness"))}
        subprocess.run([sys.executable, "bench/turns_ab.py", "--bundles", str(bundles),
                        "--variants", variant, "--rounds", "1", "--json", out.name],
                       cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
        rows: list[dict] = json.loads(Path(out.name).read_text())
        return rows[0]


def summary(rows: list[dict]) -> dict:
    def spread(key: str) -> dict:
        values = [r[key] for r in rows]
        return {"median": round(statistics.median(values), 3), "min": min(values),
                "max": max(values)}
    return {"turns": len(rows), "load": [r["load"] for r in rows], "wall_s": spread("wall_s"),
            "client_cpu_s": spread("client_cpu_s"), "server_cpu_s": spread("server_cpu_s")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True,
                        help="NAME=PATH of a gitgate source tree (twice or more)")
    parser.add_argument("--bundles", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kubectl", action="store_true",
                        help="also a kubectl turn each round (in the last tree)")
    parser.add_argument("--json", help="write the turns and the summary to this file")
    args = parser.parse_args(argv)
    trees = dict(t.split("=", 1) for t in args.tree)
    turns = [(name, path, "gitgate") for name, path in trees.items()]
    if args.kubectl:
        turns.append(("kubectl", list(trees.values())[-1], "kubectl"))
    rows: list[dict] = []
    for round_ in range(args.rounds):
        for name, path, variant in turns:
            began_at = load()
            row = {"tree": name, "round": round_, "load": began_at,
                   **turn(Path(path).resolve(), args.bundles, variant)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            document = {"bundles": args.bundles, "turns": rows,
                        "summary": summaries(rows, [n for n, _, _ in turns])}
            if args.json:
                Path(args.json).write_text(json.dumps(document, indent=1))
    print(json.dumps(document["summary"], indent=1))
    return 0


def summaries(rows: list[dict], names: list[str]) -> dict:
    """Each tree's summary; with kubectl turns, each tree's median turn over kubectl's."""
    out = {n: summary([r for r in rows if r["tree"] == n]) for n in names
           if any(r["tree"] == n for r in rows)}
    if "kubectl" in out:
        kubectl = out["kubectl"]["wall_s"]["median"]
        for name, figures in out.items():
            if name != "kubectl":
                figures["over_kubectl"] = round(figures["wall_s"]["median"] / kubectl, 3)
    return out


if __name__ == "__main__":
    sys.exit(main())
