"""Who may sign, as gitgate.yaml declares it (`verify:`, `gates.signers`), read from a revision
the loop already trusts, never from the head it is about to judge: an unsigned commit that
drops `verify:` or adds its author's key to the allowed signers changes nothing, because the
rules and the key files come from the last verified revision. A signed commit may change them
(the signer vouches for it). Before any revision was verified, the head's own file decides
(trust on first use); a trust root nobody who can push may touch is the `run` flags'
(`--verify-commits --allowed-signers`), which then take precedence over the file."""

from __future__ import annotations

import hashlib
import posixpath
from pathlib import Path

import git

from gitgate.errors import GitgateError, SourceError
from gitgate.source.config import REPO_CONFIG, Provenance, parse_repo_config
from gitgate.source.signatures import Trust


class RepoTrust:
    """The signers gitgate.yaml names, at any revision. `home`: where their keys are kept
    (one folder per set of key files); `folder`: where gitgate.yaml sits in the Git repo."""

    def __init__(self, home: Path, folder: str = "."):
        self.home = Path(home)
        self.folder = posixpath.normpath(folder.strip().strip("/") or ".")  # `./sub`, `sub/`: `sub`
        self._made: dict[str, Trust] = {}

    def _rel(self, name: str) -> str:
        return name if self.folder == "." else posixpath.join(self.folder, name)

    def _show(self, repo: git.Repo, revision: str, path: str) -> str | None:
        try:
            return str(repo.git.show(f"{revision}:{self._rel(path)}",
                                     strip_newline_in_stdout=False))
        except git.GitCommandError:
            return None

    def spec_at(self, repo: git.Repo, revision: str) -> Provenance | None:
        """`verify:` and `gates.signers` as `revision` has them. Raises SourceError when its
        gitgate.yaml cannot be read: who may sign is then unknown, and nothing is applied."""
        try:
            return parse_repo_config(self._show(repo, revision, REPO_CONFIG)).provenance
        except GitgateError as exc:
            raise SourceError(f"{self._rel(REPO_CONFIG)} at {revision[:12]} cannot be read, so "
                              f"who may sign is unknown and nothing is applied: {exc}") from None

    def trust_at(self, repo: git.Repo, revision: str, spec: Provenance) -> Trust:
        """The allowed signers of `spec`, their key files read from `revision`."""
        texts = {}
        for path in (spec.allowed_signers, spec.allowed_gpg_keys):
            if path is None:
                continue
            text = self._show(repo, revision, path)
            if text is None:
                raise SourceError(f"{self._rel(path)} (named by {self._rel(REPO_CONFIG)}'s "
                                  f"verify) is missing at {revision[:12]}: nothing is applied "
                                  "until the keys it names are committed")
            texts[path] = text
        digest = hashlib.sha256(repr(sorted(texts.items())).encode()).hexdigest()[:16]
        if digest not in self._made:
            kept = self.home / digest
            kept.mkdir(parents=True, exist_ok=True, mode=0o700)
            files = {}
            for path, name in ((spec.allowed_signers, "allowed_signers"),
                               (spec.allowed_gpg_keys, "keys.asc")):
                if path is not None:
                    (kept / name).write_text(texts[path], encoding="utf-8")
                    files[name] = kept / name
            self._made[digest] = Trust(files.get("allowed_signers"), files.get("keys.asc"),
                                       kept)
        return self._made[digest]

    def for_commits(self, repo: git.Repo, head: str, verified: str) -> Trust | None:
        """What `head` is judged by: the trust of the last verified revision when it asks for
        verification; else the head's own (first use, or after a signed commit turned
        verification off); None when neither asks."""
        if verified:
            spec = self.spec_at(repo, verified)
            if spec is not None and spec.commits:
                return self.trust_at(repo, verified, spec)
        spec = self.spec_at(repo, head)
        return self.trust_at(repo, head, spec) if spec is not None and spec.commits else None

    def for_gates(self, repo: git.Repo, revision: str) -> tuple[Trust, tuple[str, ...]] | None:
        """The gate signers `revision` names, and the trust their signatures are checked by."""
        spec = self.spec_at(repo, revision)
        if spec is None or not spec.gate_signers:
            return None
        return self.trust_at(repo, revision, spec), spec.gate_signers
