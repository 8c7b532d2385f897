"""The hostile-repo corpus's fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

OUTSIDE = "OUTSIDE-FILE-CONTENT-7f3a"  # what a file outside the repo holds: never in output


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder outside the repo, with a file an attacker would like to read."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(OUTSIDE + "\n")
    (folder / "values.yaml").write_text(f"leak: {OUTSIDE}\n")
    return folder
