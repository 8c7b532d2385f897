"""Follow a remote branch with GitPython: clone once into a cache folder, then fetch and hard
reset each tick (a force-pushed branch is followed). Credentials reach git only through its
environment and never appear in logs, errors or status."""

from __future__ import annotations

import base64
import contextlib
import os
import posixpath
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import git

from gitgate.errors import SourceError
from gitgate.source.anchors import TrustAnchors
from gitgate.source.gateguard import TRUSTED_REF, GateGuard, GateReport
from gitgate.source.provenance import RepoTrust
from gitgate.source.signatures import Signature, Trust
from gitgate.source.tree import RepoTree

NEWER_REF = "refs/gitgate/newer"  # a head looked at while a pass writes (`GitSource.peek`)
PEEK_TIMEOUT = 30  # seconds a look at the remote may take before git is stopped
PEEK_COMMITS = 32  # the newest commits a look reads the freeze files of
_URL_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")


@dataclass(frozen=True)
class GitAuth:
    """HTTPS: a token (from a file or an env var) sent as basic auth; SSH: a key and a
    known_hosts file (host keys are always checked)."""

    token: str | None = None
    username: str = "x-access-token"
    ssh_key: Path | None = None
    known_hosts: Path | None = None

    @classmethod
    def from_settings(cls, token_file: str | None = None, token_env: str | None = None,
                      ssh_key: str | None = None, known_hosts: str | None = None,
                      username: str = "x-access-token") -> GitAuth:
        token = None
        if token_file:
            try:
                token = Path(token_file).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise SourceError(f"cannot read the git token file {token_file}: "
                                  f"{exc.strerror or exc} (--git-token-file)") from None
            if not token:
                raise SourceError(f"the git token file {token_file} is empty "
                                  "(--git-token-file)")
        elif token_env:
            token = os.environ.get(token_env, "").strip() or None
            if token is None:
                raise SourceError(f"environment variable {token_env} (git token) is empty")
        if ssh_key and not known_hosts:
            raise SourceError("an SSH key needs --git-known-hosts: gitgate always checks host "
                              "keys")
        return cls(token, username, Path(ssh_key) if ssh_key else None,
                   Path(known_hosts) if known_hosts else None)

    def env(self) -> dict[str, str]:
        env = {"GIT_TERMINAL_PROMPT": "0"}
        if self.token:
            basic = base64.b64encode(f"{self.username}:{self.token}".encode()).decode()
            env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="http.extraHeader",
                       GIT_CONFIG_VALUE_0=f"Authorization: Basic {basic}")
        if self.ssh_key:
            env["GIT_SSH_COMMAND"] = (
                f"ssh -i {self.ssh_key} -o IdentitiesOnly=yes -o BatchMode=yes "
                f"-o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes")
        return env

    def secrets(self) -> list[str]:
        if not self.token:
            return []
        basic = base64.b64encode(f"{self.username}:{self.token}".encode()).decode()
        return [self.token, basic]


def redact(text: str, secrets: list[str]) -> str:
    text = _URL_CREDENTIALS.sub(r"\1***@", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def git_said(stderr: str) -> str:
    """git's complaint in one line: its `fatal:`/`error:` lines (GitPython's `stderr: '...'`
    wrapping and git's progress lines dropped), else every line joined."""
    text = stderr.strip()
    if text.startswith("stderr:"):
        text = text.removeprefix("stderr:").strip().strip("'").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line.split(":", 1)[1].strip() for line in lines
            if line.startswith(("fatal:", "error:"))]
    return "; ".join(said or lines) or "git gave no reason"


VERIFIED_REF = "refs/gitgate/verified"  # the last commit signed by an allowed key


class GitSource:
    """One remote branch checked out in `cache_dir`."""

    def __init__(self, url: str, branch: str, cache_dir: Path, auth: GitAuth | None = None,
                 trust: Trust | None = None, guard: GateGuard | None = None,
                 repo_trust: RepoTrust | None = None):
        self.url = url
        self.branch = branch
        self.cache_dir = Path(cache_dir)
        self.auth = auth or GitAuth()
        self.trust = trust  # with it, only a commit signed by an allowed key is taken
        self.signature: Signature | None = None  # of the branch's head, when checked
        self.guard = guard  # with it, freeze files change only with a gate signer's signature
        # without `trust`: gitgate.yaml's `verify:` (read from the last verified revision)
        self.repo_trust = repo_trust
        self._deep = False  # the history was fetched whole once (gate signers need it)
        self.gate_report: GateReport | None = None
        self._repo: git.Repo | None = None
        # the anchors the loop recorded, to be set before the next judgement (`restore`)
        self._restoring: TrustAnchors | None = None
        self.anchors = TrustAnchors(self.anchor_source)  # as the last sync left them

    @property
    def judges(self) -> bool:
        """Whether heads are judged (signatures or freeze files): there are anchors."""
        return self.trust is not None or self.guard is not None or self.repo_trust is not None

    @property
    def anchor_source(self) -> str:
        return f"{self.display_url}#{self.branch}"

    def restore(self, anchors: TrustAnchors | None) -> None:
        """The trust anchors recorded by an earlier run (None: none recorded; the checkout's
        own, if any, stay): set before the next head is judged, from the remote if the
        checkout lacks them. A sync fails, and keeps trying, while one cannot be found."""
        self._restoring = anchors

    @property
    def display_url(self) -> str:
        return redact(self.url, self.auth.secrets())

    def _fail(self, what: str, exc: Exception) -> SourceError:
        detail = redact(git_said(str(getattr(exc, "stderr", "") or exc)), self.auth.secrets())
        return SourceError(f"{what} {self.display_url} (branch {self.branch}) failed: {detail}")

    def sync(self) -> str:
        """Bring the checkout to the remote branch; returns the commit id."""
        env = {**os.environ, **self.auth.env()}
        try:
            repo = self._open_or_clone(env)
            shallow = ["--depth=1"] if "://" in self.url or self.url.startswith("git@") else []
            if self._deep or (self.guard is not None and self.guard.trust is not None):
                shallow = self._unshallow(repo)  # who changed a gate needs the commits between
            repo.git.fetch("origin", f"+refs/heads/{self.branch}:refs/remotes/origin/"
                           f"{self.branch}", "--force", "--prune", *shallow, env=env)
            repo.git.reset("--hard", f"origin/{self.branch}", env=env)
            repo.git.clean("-ffdx", env=env)
            head = repo.head.commit.hexsha
            if self._restoring is not None:
                self._anchor(repo, env, self._restoring)
            self._restoring = None
            trust = self.trust
            if trust is None and self.repo_trust is not None:
                trust = self.repo_trust.for_commits(repo, head, self._verified_ref(repo, env))
            if trust is None:
                self.signature = None
            revision = head if trust is None else self._verified(repo, head, env, trust)
            if self.guard is not None:
                self.gate_report = self.guard.enforce(
                    repo, revision, deepen=lambda: self._deepen(repo, env))
                if self.gate_report is not None:
                    revision = self.gate_report.in_force  # a refused head: the trusted one
            self.anchors = self._anchors_of(repo)
            return revision
        except (git.GitCommandError, git.InvalidGitRepositoryError, ValueError) as exc:
            raise self._fail("fetching", exc) from None

    def _anchor(self, repo: git.Repo, env: dict[str, str], anchors: TrustAnchors) -> None:
        """Point the checkout's anchor refs at the recorded revisions, fetching them when the
        checkout lacks them (a new cache, or a history rewritten since). Raises SourceError
        when the remote no longer has one: nothing is judged against anything else."""
        for ref, sha, what in ((VERIFIED_REF, anchors.verified, "last verified"),
                               (TRUSTED_REF, anchors.gates, "last trusted")):
            if not sha:
                continue
            if not _has_commit(repo, sha):
                self._deepen(repo, env)
                with contextlib.suppress(git.GitCommandError):  # not there: said below
                    repo.git.fetch("origin", sha, env=env)
            if not _has_commit(repo, sha):
                raise SourceError(
                    f"the {what} revision {sha[:12]} (recorded on the API server in "
                    f"gitgate.provenance) is not in {self.display_url} any more: nothing is "
                    "judged against anything else, so nothing new is applied (delete that "
                    "record to start over from the branch's head)")
            repo.git.update_ref(ref, sha, env=env)

    def _anchors_of(self, repo: git.Repo) -> TrustAnchors:
        listed = str(repo.git.for_each_ref("--format=%(refname) %(objectname)",
                                           "refs/gitgate/"))
        refs = dict(line.split(" ", 1) for line in listed.splitlines() if " " in line)
        return TrustAnchors(self.anchor_source, refs.get(VERIFIED_REF, ""),
                            refs.get(TRUSTED_REF, ""))

    @staticmethod
    def _unshallow(repo: git.Repo) -> list[str]:
        return ["--unshallow"] if (Path(repo.git_dir) / "shallow").exists() else []

    def _deepen(self, repo: git.Repo, env: dict[str, str]) -> None:
        """The whole history of the branch, once (a shallow clone hides who changed what)."""
        self._deep = True  # and from now on every fetch keeps it whole
        if self._unshallow(repo):
            repo.git.fetch("origin", f"+refs/heads/{self.branch}:refs/remotes/origin/"
                           f"{self.branch}", "--unshallow", env=env)

    @staticmethod
    def _verified_ref(repo: git.Repo, env: dict[str, str]) -> str:
        try:
            return str(repo.git.rev_parse("--verify", "--quiet", VERIFIED_REF, env=env)).strip()
        except git.GitCommandError:
            return ""

    def _verified(self, repo: git.Repo, head: str, env: dict[str, str], trust: Trust) -> str:
        """`head` when an allowed key signed it (it becomes the verified revision); else the
        last verified revision, checked out again and checked again with today's signers.
        Raises SourceError when no revision was ever verified: nothing is applied then."""
        self.signature = trust.check(repo, head)
        if self.signature.trusted:
            repo.git.update_ref(VERIFIED_REF, head, env=env)
            return head
        kept = self._verified_ref(repo, env)
        if not kept or not trust.check(repo, kept).trusted:
            raise SourceError(f"{self.signature.said()}, and no earlier commit of "
                              f"{self.branch} was verified: nothing is applied until the "
                              "branch's head is signed by an allowed key")
        repo.git.reset("--hard", kept, env=env)
        repo.git.clean("-ffdx", env=env)
        return kept

    def peek(self, known: str, path: str = ".") -> list[tuple[str, RepoTree]]:
        """The commits of the remote branch after `known` up to its head (at most
        `PEEK_COMMITS`, the newest; the head alone when `known` is not in the history), oldest
        first, each with its files under `path` as a tree read from Git's objects (`git
        ls-remote`, then a fetch into a ref of its own): the checkout a pass is reading is not
        touched. Every commit, not only the head: a freeze pushed and lifted again before
        the look still counts. A link is never followed: every symlink is listed as leaving
        the repo (fail closed). Empty when the head is `known`. Raises SourceError."""
        env = {**os.environ, **self.auth.env()}
        try:
            repo = self._open_or_clone(env)
            said = str(repo.git.ls_remote("origin", f"refs/heads/{self.branch}", env=env,
                                          kill_after_timeout=PEEK_TIMEOUT))
            head = said.split()[0] if said.strip() else ""
            if not head or head == known:
                return []
            repo.git.fetch("origin", f"+refs/heads/{self.branch}:{NEWER_REF}", "--force",
                           env=env, kill_after_timeout=PEEK_TIMEOUT)
            try:
                listed = str(repo.git.rev_list(f"--max-count={PEEK_COMMITS}", head,
                                               f"^{known}", "--")).split()
            except git.GitCommandError:  # `known` is not here (a shallow or rewritten past)
                listed = [head]
            return [(sha, _tree_at(repo, sha, path)) for sha in reversed(listed or [head])]
        except (git.GitCommandError, ValueError) as exc:
            raise self._fail("looking for a newer commit of", exc) from None

    def deepen(self, commits: int = 50) -> None:
        """In a shallow checkout, fetch `commits` more of the branch's history (the commits
        that came with the last fetch, to tell which of them changed a bundle); a failure is
        quiet: the caller then knows less, never something false."""
        if not (self.cache_dir / ".git" / "shallow").exists():
            return
        env = {**os.environ, **self.auth.env()}
        with contextlib.suppress(git.GitCommandError, ValueError):
            self._open_or_clone(env).git.fetch(
                "origin", f"+refs/heads/{self.branch}:refs/remotes/origin/{self.branch}",
                f"--deepen={commits}", env=env, kill_after_timeout=PEEK_TIMEOUT)

    def ensure_identity(self) -> None:
        """A committer for what gitgate itself commits (`run --commit-halts`), unless the
        checkout's Git configuration already names one."""
        repo = self._open_or_clone({**os.environ, **self.auth.env()})
        reader = repo.config_reader()
        if not reader.has_option("user", "name") or not reader.has_option("user", "email"):
            with repo.config_writer() as writer:
                writer.set_value("user", "name", "gitgate")
                writer.set_value("user", "email", "gitgate@localhost")

    def _open_or_clone(self, env: dict[str, str]) -> git.Repo:
        if self._repo is not None:
            return self._repo
        if (self.cache_dir / ".git").is_dir():
            repo = git.Repo(self.cache_dir)
            if repo.remotes.origin.url != self.url:
                repo.remotes.origin.set_url(self.url)
        else:
            if self.cache_dir.exists():
                shutil.rmtree(self.cache_dir)
            self.cache_dir.parent.mkdir(parents=True, exist_ok=True)
            shallow = ["--depth=1"] if ("://" in self.url or self.url.startswith("git@")) and (
                self.guard is None) else []
            try:
                repo = git.Repo.clone_from(self.url, self.cache_dir, branch=self.branch,
                                           env=env, multi_options=shallow)
            except git.GitCommandError as exc:
                raise self._fail("cloning", exc) from None
        self._repo = repo
        return repo


def _has_commit(repo: git.Repo, sha: str) -> bool:
    try:
        repo.git.cat_file("-e", f"{sha}^{{commit}}")
    except git.GitCommandError:
        return False
    return True


def _tree_at(repo: git.Repo, commit: str, path: str) -> RepoTree:
    """The files of `commit` under `path`, as a RepoTree read from Git's objects."""
    folder = posixpath.normpath(path.strip().strip("/") or ".")  # `./sub`, `sub/`: `sub`
    prefix = "" if folder == "." else folder + "/"
    listed = str(repo.git.ls_tree("-r", "-z", "--full-tree", commit, "--", prefix or "."))
    files: set[str] = set()
    links: set[str] = set()
    for row in filter(None, listed.split("\0")):
        meta, _, name = row.partition("\t")
        if not name.startswith(prefix):
            continue
        rel = name[len(prefix):]
        # a file is a blob of mode 100644 or 100755; a link (120000) or a gitlink (160000,
        # another repository's commit) is never followed: listed as leaving the repo
        (files if meta.split(" ")[0] in ("100644", "100755") else links).add(rel)

    def read(rel: str) -> str | None:
        if rel not in files:
            return None
        try:
            return str(repo.git.show(f"{commit}:{prefix}{rel}"))
        except git.GitCommandError as exc:
            raise SourceError(f"cannot read {rel} of {commit[:12]}: "
                              f"{git_said(str(exc.stderr or exc))}", file=rel) from None

    return RepoTree(frozenset(files), frozenset(links), read)


