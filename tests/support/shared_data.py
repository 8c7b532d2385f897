"""Where the team's shared reference data (../shared) is: Karmada's CRDs for the tests."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


# gitgate's own stand-in (only the schema parts it relies on), for a runner without ../shared
FIXTURE_CRDS = REPO_ROOT / "tests" / "data" / "karmada-policy-crds"


def shared_crds_dir() -> Path | None:
    """`$GITGATE_SHARED_DIR/karmada-crds`, else `shared/karmada-crds` beside the checkout (or
    beside one of its parents); None when neither is there."""
    try:
        return _find_shared()
    except FileNotFoundError:
        return None


def karmada_crds_dir() -> Path:
    """Karmada's real policy CRDs from the team's shared folder (used from there, never copied
    into the project), else the project's stand-in with the parts gitgate relies on
    (GITGATE_REQUIRE_SHARED=1 makes their absence an error instead)."""
    found = shared_crds_dir()
    if found is not None:
        return found
    if os.environ.get("GITGATE_REQUIRE_SHARED"):
        return _find_shared()
    return FIXTURE_CRDS


def _find_shared() -> Path:
    if os.environ.get("GITGATE_SHARED_DIR"):  # set: the only place looked at
        candidates = [Path(os.environ["GITGATE_SHARED_DIR"])]
    else:
        candidates = [parent / "shared" for parent in REPO_ROOT.parents]
    for shared in candidates:
        crds = shared / "karmada-crds"
        if list(crds.glob("policy.karmada.io_*.yaml")):
            return crds
    raise FileNotFoundError(
        "Karmada's policy CRDs were not found: put the team's shared/ folder beside this "
        "checkout or set GITGATE_SHARED_DIR to it")
