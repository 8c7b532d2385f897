"""Who may change a freeze (`--gate-signers`): a change to a gate file, a PAUSE file or
gitgate.yaml counts only when one of the gate signers signed it.

The loop keeps the last revision whose freeze files were all changed by gate signers
(`refs/gitgate/gates-trusted`, also recorded on the API server: see `source.anchors`). Each
head is judged against it by one rule (`GateGuard.judge`, which `check --since` uses too): for
every freeze file that differs between the two, the newest commit that brought its content
into the history being judged decides (`source.deciders`: down from the head to the trusted
revision, so a merge that takes a file's version from another branch decides it, never that
branch's old commit). Signed by a gate signer,
the file is taken as the head has it; otherwise it is put back as the newest gate signer's
commit (or the trusted revision) left it. So a forged removal or weakening leaves the freeze
on. A file that did not exist there is kept as the head has it: a forged *added* gate holds
more, which is safe. A head whose history does not contain the trusted revision (a rewritten
history) is judged the same way, and when any of its freeze-file changes does not count, the
head is refused whole: the trusted revision stays in force and stays the baseline. The
checkout is changed on disk before any pass reads it, so every path that reads gates (the
suspension written first, the plan) sees the same ones."""

from __future__ import annotations

import posixpath
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import git

from gitgate.errors import GitgateError, SourceError
from gitgate.source.config import REPO_CONFIG, parse_repo_config
from gitgate.source.deciders import changed_paths, deciders, touched
from gitgate.source.discover import is_pause_name
from gitgate.source.provenance import RepoTrust
from gitgate.source.signatures import Signature, Trust

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
    rewritten: bool = False  # the head's history does not contain the trusted revision
    # for each freeze file whose change does not count: the revision it is taken from
    sources: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def head_refused(self) -> bool:
        """A rewritten history with a freeze-file change that does not count: the head is
        not taken at all (the trusted revision stays in force)."""
        return self.rewritten and bool(self.refused)

    @property
    def in_force(self) -> str:
        return self.trusted_from if self.head_refused else self.head

    def said(self) -> str:
        if not self.refused:
            return f"gates from {self.head[:12]}"
        why = f"{'; '.join(r.said() for r in self.refused)}, without a gate signer's signature"
        if self.head_refused:
            return (f"head {self.head[:12]} refused: its history does not contain the trusted "
                    f"revision {self.trusted_from[:12]} and its freeze files differ from it "
                    f"({why}); {self.trusted_from[:12]} stays in force")
        return (f"gates from {self.trusted_from[:12]} for {', '.join(self.restored) or 'none'} "
                f"({why})")

    def as_dict(self) -> dict[str, object]:
        return {"head": self.head, "trustedFrom": self.trusted_from,
                "restored": list(self.restored), "message": self.said(),
                "rewritten": self.rewritten, "headRefused": self.head_refused,
                "inForce": self.in_force,
                "refused": [{"commit": r.commit, "paths": list(r.paths), "why": r.why}
                            for r in self.refused]}


class GateGuard:
    """The gate signers, and where the gitgate repo sits in the Git repo (`folder`): the keys
    of `--gate-signers` (`trust`: any of them), else gitgate.yaml's `gates.signers` as the
    last trusted revision has it (`repo_trust`; no guard while that names none)."""

    def __init__(self, trust: Trust | None = None, folder: str = ".",
                 repo_trust: RepoTrust | None = None):
        self.trust = trust
        self.folder = posixpath.normpath(folder.strip().strip("/") or ".")  # `./sub`, `sub/`: `sub`
        self.repo_trust = repo_trust

    def signers(self, repo: git.Repo, revision: str) -> tuple[Trust, tuple[str, ...]] | None:
        """Whose signatures count at `revision` (an empty name list: any key of the trust)."""
        if self.trust is not None:
            return self.trust, ()
        return self.repo_trust.for_gates(repo, revision) if self.repo_trust else None

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

    def _key_files(self, repo: git.Repo, revision: str) -> set[str]:
        """The key files gitgate.yaml's `verify` names at `revision`: changing who signs is
        changing a freeze."""
        try:
            spec = self.repo_trust.spec_at(repo, revision) if self.repo_trust else None
        except GitgateError:
            spec = None
        return {self._rel(p) for p in (spec.allowed_signers, spec.allowed_gpg_keys)
                if p} if spec is not None else set()

    def _freeze_file(self, path: str, gate_dirs: set[str], keys: set[str]) -> bool:
        return (path == self._rel(REPO_CONFIG) or is_pause_name(posixpath.basename(path))
                or path in keys or any(path.startswith(d + "/") for d in gate_dirs))

    def enforce(self, repo: git.Repo, head: str,
                deepen: Callable[[], None] | None = None) -> GateReport | None:
        """Judge `head` (checked out) against the trusted revision (`judge`) and act on it:
        put the freeze files whose change does not count back; refuse a rewritten head whose
        changes do not all count (the trusted revision is checked out again: `in_force`);
        advance the trusted revision when every change counts. The first head seen is the
        starting point. None when no gate signers are named. `deepen` fetches the history in
        between (before it is walked: a shallow clone would hide the trusted revision)."""
        try:
            base = str(repo.git.rev_parse("--verify", "--quiet", TRUSTED_REF)).strip()
        except git.GitCommandError:
            base = ""
        if self.signers(repo, base or head) is None:
            repo.git.update_ref(TRUSTED_REF, head)
            return None
        if deepen is not None:
            deepen()
        if not base:  # the first head this loop ever judged (none recorded either)
            repo.git.update_ref(TRUSTED_REF, head)
            return GateReport(head, head)
        report = self.judge(repo, base, head)
        assert report is not None  # the same signers as above
        if report.head_refused:
            repo.git.reset("--hard", base)
            repo.git.clean("-ffdx")
            return replace(report, restored=())
        restored = tuple(sorted(path for revision, path in report.sources
                                if self._put_back(repo, revision, path)))
        if not report.refused:
            repo.git.update_ref(TRUSTED_REF, head)
        return replace(report, restored=restored)

    def judge(self, repo: git.Repo, base: str, head: str) -> GateReport | None:
        """The one rule, for the loop (`enforce`) and for `check --since` in CI: what a loop
        whose trusted revision is `base` makes of the freeze-file changes up to `head`,
        writing nothing; `restored` lists what it would put back (none when it refuses the
        head). None when `base` names no gate signers."""
        signers = self.signers(repo, base)
        if signers is None:
            return None
        rewritten = not _is_ancestor(repo, base, head)
        refused, put_back = self._review(repo, base, head, *signers, rewritten)
        restored = () if rewritten and refused else tuple(
            sorted(p for r, p in put_back if _has(repo, r, p)))
        return GateReport(head, base if refused else head, refused, restored, rewritten,
                          tuple(put_back))

    def _review(self, repo: git.Repo, base: str, head: str, trust: Trust,
                names: tuple[str, ...], rewritten: bool,
                ) -> tuple[tuple[Refused, ...], list[tuple[str, str]]]:
        """The commits whose freeze-file changes do not count, and for each such file the
        revision to take it from (the newest gate signer's change of it, or `base`). The
        commits that decide a file are those that brought its content into the history
        being judged (`source.deciders`)."""
        gate_dirs = {self._gates_path(repo, base), self._gates_path(repo, head)}
        keys = self._key_files(repo, base) | self._key_files(repo, head)
        net = changed_paths(repo, base, head)
        # also a file changed and changed back on the way (a signed gate removed unsigned
        # before the next fetch): judged when a gate signer's version of it is on the way
        between = touched(repo, base, head, rewritten) - net
        changed = sorted(p for p in net | between if self._freeze_file(p, gate_dirs, keys))
        decided = deciders(repo, base, head, changed, rewritten) if changed else {}
        signatures: dict[str, str] = {}
        refused: dict[str, list[str]] = {}
        reasons: dict[str, str] = {}
        put_back = []
        for path in changed:
            checks = []
            for commit in decided[path]:
                if commit not in signatures:
                    signatures[commit] = _judged(trust.check(repo, commit), names)
                checks.append((commit, signatures[commit]))
            if path in between and all(why for _, why in checks):
                continue  # no gate signer's version on the way: nothing was frozen by it
            if not checks:  # it changed, and no commit says who changed it: fail closed
                refused.setdefault("unknown", []).append(path)
                reasons["unknown"] = "no commit between the two revisions changes it"
            elif not checks[0][1]:
                continue  # the newest change of this file is a gate signer's
            for commit, why in checks:
                if why:
                    refused.setdefault(commit, []).append(path)
                    reasons[commit] = why
                else:
                    break
            put_back.append((next((c for c, why in checks if not why), base), path))
        return tuple(Refused(c, tuple(sorted(paths)), reasons[c])
                     for c, paths in refused.items()), put_back

    def _put_back(self, repo: git.Repo, revision: str, path: str) -> bool:
        """The file as `revision` has it; a file it lacks stays as the head has it (an
        added gate holds more). Whatever the head put in its way (a link, a folder, a file
        where a folder was) is removed first, so the freeze file is a file again; nothing is
        ever written through a link. Returns whether the checkout changed."""
        try:
            text = repo.git.show(f"{revision}:{path}", strip_newline_in_stdout=False)
        except git.GitCommandError:
            return False
        target = _cleared_way(Path(str(repo.working_tree_dir)), path)
        if target.is_file() and not target.is_symlink() and target.read_text(
                encoding="utf-8", errors="replace") == text:
            return False
        _remove(target)
        target.write_text(text, encoding="utf-8")
        return True


def _remove(path: Path) -> None:
    """Remove a link (never what it points to), a file or a folder at `path`, if any."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _cleared_way(top: Path, path: str) -> Path:
    """`top / path` with every folder above it a real folder of the checkout: a link or a
    file standing where a folder belongs is replaced by an empty folder."""
    here = top
    for part in Path(path).parts[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            _remove(here)
        here.mkdir(exist_ok=True)
    return here / Path(path).name


def _judged(signature: Signature, names: tuple[str, ...]) -> str:
    """Why `signature` does not make its commit a gate signer's; empty when it does."""
    if signature.trusted and (not names or signature.by_one_of(names)):
        return ""
    if signature.trusted:
        return (f"is signed by {signature.signer or signature.key}, who is not one of "
                "gates.signers")
    return signature.said().split(" ", 2)[2]


def _has(repo: git.Repo, revision: str, path: str) -> bool:
    try:
        repo.git.cat_file("-e", f"{revision}:{path}")
    except git.GitCommandError:
        return False
    return True


def _is_ancestor(repo: git.Repo, older: str, newer: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", older, newer)
    except git.GitCommandError:
        return False
    return True


@dataclass(frozen=True)
class Review:
    """What a loop that trusts `base` would make of the checkout's HEAD (`check`/`plan
    --since` in CI): who signed it (None: not checked) and its freeze-file changes (None: no
    gate signers)."""

    base: str
    signature: Signature | None
    gates: GateReport | None
    folder: str = "."  # where the gitgate repo sits in the Git repo

    def config_from(self) -> str | None:
        """The revision whose gitgate.yaml such a loop keeps in force at HEAD (None: HEAD's
        own): the trusted one when HEAD is not signed as `verify:` asks, or when its
        gitgate.yaml change does not count (put back as a gate signer left it)."""
        if self.signature is not None and not self.signature.trusted:
            return self.base
        if self.gates is None:
            return None
        if self.gates.head_refused:
            return self.gates.trusted_from
        config = REPO_CONFIG if self.folder == "." else posixpath.join(self.folder, REPO_CONFIG)
        if config not in self.gates.restored:
            return None
        return next((revision for revision, path in self.gates.sources if path == config), None)


def review_checkout(root: Path, since: str, home: Path, trust: Trust | None = None,
                    gates: Trust | None = None) -> Review:
    """Judge the checkout holding `root` as a loop whose last verified and trusted revision is
    `since` would (the loop's own rule: `GateGuard.judge`): gitgate.yaml's `verify:` and
    `gates.signers` (and the key files) read from `since`, never from the change under
    review. `trust` (the --verify-commits flags) takes precedence over `verify:`, and `gates`
    (the --gate-signers flags) over `gates.signers`, as in `run`. Raises SourceError when
    `since` is unknown."""
    try:
        repo = git.Repo(root, search_parent_directories=True)
        head = repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        raise SourceError(f"{root} is not in a Git checkout: --since needs one") from None
    try:
        base = str(repo.git.rev_parse("--verify", "--quiet", f"{since}^{{commit}}")).strip()
    except git.GitCommandError:
        base = ""
    if not base:
        raise SourceError(f"--since {since}: no such revision here (fetch it first, e.g. "
                          "`git fetch origin main`, and pass origin/main)")
    top = Path(str(repo.working_tree_dir)).resolve()
    folder = Path(root).resolve().relative_to(top).as_posix()
    repo_trust = RepoTrust(home, folder)
    commits = trust or repo_trust.for_commits(repo, head, base)
    signature = commits.check(repo, head) if commits is not None else None
    guard = (GateGuard(gates, folder) if gates is not None
             else GateGuard(folder=folder, repo_trust=repo_trust))
    return Review(base, signature, guard.judge(repo, base, head), guard.folder)
