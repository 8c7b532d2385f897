"""Who may change a freeze (`--gate-signers`): a change to a gate file, a PAUSE file or
gitgate.yaml counts only when one of the gate signers signed it.

The loop keeps the last revision whose freeze files were all changed by gate signers
(`refs/gitgate/gates-trusted`). At each fetch, for every freeze file changed since then, the
newest commit that touched it decides: signed by a gate signer, the file is taken as the head
has it; otherwise it is put back as the newest gate signer's commit (or that revision) left it.
So a forged removal or weakening leaves the freeze on. A file that did not exist there is kept
as the head has it: a forged *added* gate holds more, which is safe. The checkout is changed
on disk before any pass reads it, so every path that reads gates (the suspension written
first, the plan) sees the same ones."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

import git

from gitgate.errors import GitgateError
from gitgate.source.config import REPO_CONFIG, parse_repo_config
from gitgate.source.discover import PAUSE_FILE
from gitgate.source.signatures import Trust

TRUSTED_REF = "refs/gitgate/gates-trusted"


@dataclass(frozen=True)
class Refused:
    commit: str
    paths: tuple[str, ...]
    why: str  # the signature, in words

    def said(self) -> str:
        return f"commit {self.commit[:12]} changed {', '.join(self.paths)} ({self.why})"


@dataclass(frozen=True)
class GateReport:
    """What the freeze files in force come from at one head."""

    head: str
    trusted_from: str  # the last revision whose freeze files were all trusted
    refused: tuple[Refused, ...] = ()
    restored: tuple[str, ...] = field(default=())  # paths put back as a gate signer left them

    def said(self) -> str:
        if not self.refused:
            return f"gates from {self.head[:12]}"
        return (f"gates from {self.trusted_from[:12]} for {', '.join(self.restored) or 'none'} "
                f"({'; '.join(r.said() for r in self.refused)}, without a gate signer's "
                "signature)")

    def as_dict(self) -> dict[str, object]:
        return {"head": self.head, "trustedFrom": self.trusted_from,
                "restored": list(self.restored), "message": self.said(),
                "refused": [{"commit": r.commit, "paths": list(r.paths), "why": r.why}
                            for r in self.refused]}


class GateGuard:
    """The gate signers, and where the gitgate repo sits in the Git repo (`folder`)."""

    def __init__(self, trust: Trust, folder: str = "."):
        self.trust = trust
        self.folder = folder.strip("/") or "."

    def _rel(self, name: str) -> str:
        return name if self.folder == "." else posixpath.join(self.folder, name)

    def _gates_path(self, repo: git.Repo, revision: str) -> str:
        try:
            text = repo.git.show(f"{revision}:{self._rel(REPO_CONFIG)}")
        except git.GitCommandError:
            text = None
        try:
            return self._rel(parse_repo_config(text).gates_path)
        except GitgateError:
            return self._rel("gates")

    def _freeze_file(self, path: str, gate_dirs: set[str]) -> bool:
        return (path == self._rel(REPO_CONFIG) or posixpath.basename(path) == PAUSE_FILE
                or any(path.startswith(d + "/") for d in gate_dirs))

    def enforce(self, repo: git.Repo, head: str) -> GateReport:
        """Put the freeze files of the checkout (at `head`) back where a change lacks a gate
        signer's signature; advance the trusted revision when none does."""
        try:
            base = str(repo.git.rev_parse("--verify", "--quiet", TRUSTED_REF)).strip()
        except git.GitCommandError:
            base = ""
        if not base or not _is_ancestor(repo, base, head):
            # the first head seen (or history rewritten past it) is the starting point
            repo.git.update_ref(TRUSTED_REF, head)
            return GateReport(head, head)
        gate_dirs = {self._gates_path(repo, base), self._gates_path(repo, head)}
        changed = [p for p in str(repo.git.diff("--name-only", "--no-renames", base, head))
                   .splitlines() if p and self._freeze_file(p, gate_dirs)]
        refused: dict[str, list[str]] = {}
        reasons: dict[str, str] = {}
        restored = []
        for path in changed:
            commits = str(repo.git.rev_list(f"{base}..{head}", "--", path)).split()
            checks = [(c, self.trust.check(repo, c)) for c in commits]
            if not checks:  # it changed, and no commit says who changed it: fail closed
                refused.setdefault("unknown", []).append(path)
                reasons["unknown"] = "no commit between the two revisions changes it"
            elif checks[0][1].trusted:
                continue  # the newest change of this file is a gate signer's
            for commit, signature in checks:
                if not signature.trusted:
                    refused.setdefault(commit, []).append(path)
                    reasons[commit] = signature.said().split(" ", 2)[2]
                else:
                    break
            trusted_at = next((c for c, s in checks if s.trusted), base)
            if self._put_back(repo, trusted_at, path):
                restored.append(path)
        if not refused:
            repo.git.update_ref(TRUSTED_REF, head)
            return GateReport(head, head)
        return GateReport(head, base, tuple(
            Refused(c, tuple(sorted(paths)), reasons[c]) for c, paths in refused.items()),
            tuple(sorted(restored)))

    def _put_back(self, repo: git.Repo, revision: str, path: str) -> bool:
        """The file as `revision` has it; a file it lacks stays as the head has it (an
        added gate holds more). Returns whether the checkout changed."""
        try:
            text = repo.git.show(f"{revision}:{path}", strip_newline_in_stdout=False)
        except git.GitCommandError:
            return False
        top = Path(str(repo.working_tree_dir))
        target = top / path
        if any((top / Path(*Path(path).parts[:i])).is_symlink()
               for i in range(1, len(Path(path).parts) + 1)):
            return False  # never through a link; a linked gates folder holds every bundle
        if target.is_file() and target.read_text(encoding="utf-8", errors="replace") == text:
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return True


def _is_ancestor(repo: git.Repo, older: str, newer: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", older, newer)
    except git.GitCommandError:
        return False
    return True
