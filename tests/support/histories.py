"""A Git history made commit by commit, each signed by a named key of `Keys` (merges too),
and the gate guard's judgement of it with given gate signers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import git as gitpython

from gitgate.source.gateguard import GateGuard, GateReport
from gitgate.source.signatures import Trust
from tests.support.signing import Keys, allowed_signers


class History:
    """A repo on `main` (empty); `gate_signers` are the SSH keys of `keys` that are."""

    def __init__(self, tmp_path: Path, keys: Keys, *gate_signers: str):
        self.root = tmp_path / "history"
        self.root.mkdir()
        self.keys = keys
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "dev@example.com")
        self.git("config", "user.name", "Dev")
        self.trust = Trust(allowed_signers(tmp_path / "gate_signers", keys.folder,
                                           *gate_signers), None, tmp_path / "trust-home")

    def git(self, *argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=self.root, check=True, capture_output=True,
                              text=True).stdout.strip()

    def _write(self, files: dict[str, str | None]) -> None:
        for rel, text in files.items():
            path = self.root / rel
            if text is None:
                self.git("rm", "-q", "--ignore-unmatch", "--", rel)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        self.git("add", "-A")

    def commit(self, who: str | None, files: dict[str, str | None], what: str,
               branch: str | None = None, start: str | None = None) -> str:
        """Commit `files` (None: delete) on `branch` (made at `start` when given; None: the
        current one), signed as `who`; returns the commit."""
        if branch is not None:
            self.git("checkout", "-q", *(["-B", branch, start] if start else [branch]))
        self._write(files)
        self.keys.commit(self.root, who, what)
        return self.git("rev-parse", "HEAD")

    def merge(self, who: str, onto: str, *others: str, files: dict[str, str | None],
              what: str = "merge") -> str:
        """A merge commit on branch `onto` of `others` (in that order: its first parent is
        `onto`), whose tree is `onto`'s with `files` written (None: deleted), signed as `who`."""
        self.git("checkout", "-q", onto)
        self.git("merge", "-q", "--no-ff", "--no-commit", "-s", "ours", *others)
        self._write(files)
        self.keys.commit(self.root, who, what)
        assert len(self.git("log", "-1", "--format=%P").split()) == 1 + len(others)
        return self.git("rev-parse", "HEAD")

    def judge(self, base: str, head: str) -> GateReport:
        report = GateGuard(self.trust).judge(gitpython.Repo(self.root), base, head)
        assert report is not None
        return report
