"""Where the team's shared reference data (../shared) is: Karmada's CRDs for the tests."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def karmada_crds_dir() -> Path:
    """`$GITGATE_SHARED_DIR/karmada-crds`, else `shared/karmada-crds` beside the checkout (or
    beside one of its parents). The CRDs are used from there, never copied into the project."""
    candidates = []
    if os.environ.get("GITGATE_SHARED_DIR"):
        candidates.append(Path(os.environ["GITGATE_SHARED_DIR"]))
    candidates += [parent / "shared" for parent in REPO_ROOT.parents]
    for shared in candidates:
        crds = shared / "karmada-crds"
        if list(crds.glob("policy.karmada.io_*.yaml")):
            return crds
    raise FileNotFoundError(
        "Karmada's policy CRDs were not found: put the team's shared/ folder beside this "
        "checkout or set GITGATE_SHARED_DIR to it")
