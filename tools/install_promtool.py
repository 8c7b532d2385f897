"""Put promtool (for the alert rules' tests) into a venv's bin, from Debian's `prometheus`
package: `apt-get download` fetches the .deb (no root needed), `dpkg-deb -x` unpacks it,
and only `usr/bin/promtool` is kept; nothing is installed system-wide and no server starts.
A promtool already on PATH is kept. Where neither apt nor dpkg is there, it says so and
exits 0: the tests that need promtool then skip, saying why."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, type=Path, help="the venv's bin folder")
    args = parser.parse_args()
    target = args.bin / "promtool"
    if target.exists() or shutil.which("promtool"):
        return 0
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        print("promtool: no apt-get/dpkg-deb here; the alert-rule tests will skip "
              "(install Debian's prometheus package to run them)", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="gitgate-promtool-") as scratch:
        where = Path(scratch)
        fetched = subprocess.run(["apt-get", "download", "-q", "prometheus"], cwd=where,
                                 capture_output=True, text=True, timeout=600)
        debs = sorted(where.glob("prometheus_*.deb"))
        if fetched.returncode != 0 or not debs:
            print("promtool: `apt-get download prometheus` failed "
                  f"({(fetched.stderr or fetched.stdout).strip()[-300:]}); the alert-rule "
                  "tests will skip", file=sys.stderr)
            return 0
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(where / "root")], check=True,
                       timeout=600)
        found = where / "root" / "usr" / "bin" / "promtool"
        if not found.is_file():
            print("promtool: the prometheus package holds no usr/bin/promtool; the alert-rule "
                  "tests will skip", file=sys.stderr)
            return 0
        shutil.copy2(found, target)
        target.chmod(0o755)
    print(f"promtool: installed {target} from Debian's prometheus package")
    return 0


if __name__ == "__main__":
    sys.exit(main())
