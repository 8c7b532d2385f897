"""Make sure Debian's Chromium is there for the web page's browser tests
(tests/integration/test_web_browser.py drives it headless through Playwright, with no browser
download of Playwright's own). A Chromium already on PATH is kept. As root with apt-get, it
installs Debian's `chromium` package (about a minute); otherwise it says how to get it and
exits 0: the browser tests then skip, saying why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

PACKAGE = "chromium"


def found() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def main() -> int:
    if found():
        return 0
    if not shutil.which("apt-get"):
        print("chromium: no apt-get here; the browser tests will skip (install Chromium and "
              "put it on PATH to run them)", file=sys.stderr)
        return 0
    if os.geteuid() != 0:
        print("chromium: not root, so not installed; the browser tests will skip (run "
              "`sudo apt-get install chromium` to run them)", file=sys.stderr)
        return 0
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", PACKAGE]
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=1200)
    if done.returncode != 0:  # the package lists may be missing on a fresh machine
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
        done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=1200)
    if done.returncode != 0 or not found():
        print(f"chromium: `{' '.join(install)}` failed "
              f"({(done.stderr or done.stdout).strip()[-300:]}); the browser tests will skip",
              file=sys.stderr)
        return 0
    print(f"chromium: installed Debian's {PACKAGE} package ({found()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
