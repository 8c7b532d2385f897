"""Put an OCI registry (the CNCF distribution registry, for the chart-source tests) into a
venv's bin, from Debian's `docker-registry` package: `apt-get download` fetches the .deb (no
root needed), `dpkg-deb -x` unpacks it, and only `usr/bin/docker-registry` is kept; nothing
is installed system-wide and no server starts (each test starts its own and stops it). A
registry already on PATH is kept. Where neither apt nor dpkg is there, it says so and exits
0: the tests that need a registry then skip, saying why."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "docker-registry"
BINARY = "docker-registry"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, type=Path, help="the venv's bin folder")
    args = parser.parse_args()
    target = args.bin / BINARY
    if target.exists() or shutil.which(BINARY):
        return 0
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        print(f"{BINARY}: no apt-get/dpkg-deb here; the OCI chart tests will skip (install "
              f"Debian's {PACKAGE} package to run them)", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="gitgate-registry-") as scratch:
        where = Path(scratch)
        fetched = subprocess.run(["apt-get", "download", "-q", PACKAGE], cwd=where,
                                 capture_output=True, text=True, timeout=600)
        debs = sorted(where.glob(f"{PACKAGE}_*.deb"))
        if fetched.returncode != 0 or not debs:
            print(f"{BINARY}: `apt-get download {PACKAGE}` failed "
                  f"({(fetched.stderr or fetched.stdout).strip()[-300:]}); the OCI chart "
                  "tests will skip", file=sys.stderr)
            return 0
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(where / "root")], check=True,
                       timeout=600)
        found = where / "root" / "usr" / "bin" / BINARY
        if not found.is_file():
            print(f"{BINARY}: the {PACKAGE} package holds no usr/bin/{BINARY}; the OCI chart "
                  "tests will skip", file=sys.stderr)
            return 0
        shutil.copy2(found, target)
        target.chmod(0o755)
    print(f"{BINARY}: installed {target} from Debian's {PACKAGE} package")
    return 0


if __name__ == "__main__":
    sys.exit(main())
