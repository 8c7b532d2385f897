"""Put promtool (for the alert rules' tests) and the prometheus server (for the rollout
analysis tests, which start one) into a venv's bin, from Debian's `prometheus` package:
`apt-get download` fetches the .deb (no root needed), `dpkg-deb -x` unpacks it, and only
`usr/bin/promtool` and `usr/bin/prometheus` are kept; nothing is installed system-wide and
no server starts. A binary already on PATH is kept. Where neither apt nor dpkg is there, it
says so and exits 0: the tests that need them then skip, saying why."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BINARIES = ("promtool", "prometheus")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, type=Path, help="the venv's bin folder")
    args = parser.parse_args()
    wanted = [name for name in BINARIES
              if not (args.bin / name).exists() and not shutil.which(name)]
    if not wanted:
        return 0
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        print("promtool, prometheus: no apt-get/dpkg-deb here; the tests that need them skip "
              "(install Debian's prometheus package to run them)", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="gitgate-promtool-") as scratch:
        where = Path(scratch)
        fetched = subprocess.run(["apt-get", "download", "-q", "prometheus"], cwd=where,
                                 capture_output=True, text=True, timeout=600)
        debs = sorted(where.glob("prometheus_*.deb"))
        if fetched.returncode != 0 or not debs:
            print("promtool, prometheus: `apt-get download prometheus` failed "
                  f"({(fetched.stderr or fetched.stdout).strip()[-300:]}); the tests that need "
                  "them skip", file=sys.stderr)
            return 0
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(where / "root")], check=True,
                       timeout=600)
        for name in wanted:
            found = where / "root" / "usr" / "bin" / name
            if not found.is_file():
                print(f"{name}: the prometheus package holds no usr/bin/{name}; the tests "
                      "that need it will skip", file=sys.stderr)
                continue
            target = args.bin / name
            shutil.copy2(found, target)
            target.chmod(0o755)
            print(f"{name}: installed {target} from Debian's prometheus package")
    return 0


if __name__ == "__main__":
    sys.exit(main())
