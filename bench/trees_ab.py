"""Cold-apply turns of two source trees of gitgate, round by round, each turn on a freshly
started Karmada harness: `bench/turns_ab.py --variants gitgate --rounds 1` run in one tree,
then in the other, `--rounds` times, so a drift of the machine spreads over both. A
measuring tool, not a test. Each tree runs with its own code (and its own turns_ab.py).

    GITGATE_TEST_KUBECONFIG=<state>/karmada.kubeconfig KARMADA_SRC=<karmada git dir> \\
        .venv/bin/python bench/trees_ab.py --tree before=/tmp/gg-before --tree after=. \\
        --rounds 5 --json bench/results/trees-ab.json

The JSON holds every turn (`tree`, `wall_s`, `client_cpu_s`, `server_cpu_s`, ...) and, per
tree, the median and range of the turn and of the client's CPU."""

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


def turn(tree: Path, bundles: int) -> dict:
    """One turn of `tree`'s gitgate: its turns_ab.py's one row."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "KARMADA_HARNESS": os.environ.get(
            "KARMADA_HARNESS", str(ROOT.parent / "shared" / "karmada-harness"))}
        subprocess.run([sys.executable, "bench/turns_ab.py", "--bundles", str(bundles),
                        "--variants", "gitgate", "--rounds", "1", "--json", out.name],
                       cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
        rows: list[dict] = json.loads(Path(out.name).read_text())
        return rows[0]


def summary(rows: list[dict]) -> dict:
    def spread(key: str) -> dict:
        values = [r[key] for r in rows]
        return {"median": round(statistics.median(values), 3), "min": min(values),
                "max": max(values)}
    return {"turns": len(rows), "wall_s": spread("wall_s"),
            "client_cpu_s": spread("client_cpu_s"), "server_cpu_s": spread("server_cpu_s")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True,
                        help="NAME=PATH of a gitgate source tree (twice or more)")
    parser.add_argument("--bundles", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the turns and the summary to this file")
    args = parser.parse_args(argv)
    trees = dict(t.split("=", 1) for t in args.tree)
    rows: list[dict] = []
    for round_ in range(args.rounds):
        for name, path in trees.items():
            row = {"tree": name, "round": round_, **turn(Path(path).resolve(), args.bundles)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            document = {"bundles": args.bundles, "turns": rows, "summary": {
                n: summary([r for r in rows if r["tree"] == n]) for n in trees
                if any(r["tree"] == n for r in rows)}}
            if args.json:
                Path(args.json).write_text(json.dumps(document, indent=1))
    print(json.dumps(document["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
