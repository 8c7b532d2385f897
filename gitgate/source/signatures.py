"""Who signed a commit, checked by git itself (`git verify-commit`): SSH signatures against an
allowed-signers file (`ssh-keygen -Y verify`), OpenPGP ones against a keyring holding only the
allowed public keys (a private GNUPGHOME, so the machine's own keys and trust never count).
Nothing here decides what to apply; the loop's source does (`source.git`)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import git

from gitgate.errors import ConfigError

# git's %G?: G good, U good with unknown validity (gpg: our keyring holds only allowed keys),
# X/Y good but expired (signature/key), R good but revoked key, E cannot be checked (no key),
# B bad, N none
_SAID = {"N": "is not signed", "B": "has a bad signature (the commit was changed after "
         "signing)", "R": "is signed by a revoked key", "X": "has an expired signature",
         "Y": "is signed by an expired key"}


@dataclass(frozen=True)
class Signature:
    commit: str
    status: str  # git's %G?
    key: str = ""  # the key's id or fingerprint, as git reports it
    signer: str = ""  # who the key belongs to, as far as git could tell
    trusted: bool = False
    fingerprints: tuple[str, ...] = ()  # OpenPGP: the signing key's and its primary key's

    def by_one_of(self, names: tuple[str, ...]) -> bool:
        """Trusted, and signed by one of `names`: an SSH principal, an OpenPGP user id or its
        email, or a key id or fingerprint (at least 16 hex digits, `0x` allowed)."""
        if not self.trusted:
            return False
        email = re.search(r"<([^<>]+)>", self.signer)
        ids = [i.upper() for i in (self.key, *self.fingerprints) if i]
        for name in (n.strip() for n in names):
            hexed = name.upper().removeprefix("0X")
            if name in (self.signer, self.key) or (email and name == email.group(1)) or (
                    len(hexed) >= 16 and any(i.endswith(hexed) for i in ids)):
                return True
        return False

    def said(self) -> str:
        """`commit 1a2b3c4d5e6f is not signed`, `... is signed by key K, which is not ...`."""
        head = f"commit {self.commit[:12]}"
        if self.trusted:
            return f"{head} is signed by {self.signer or self.key} (allowed)"
        if self.status in ("U", "E", "G"):  # a good signature git would not accept from us
            return f"{head} is signed by key {self.key or 'unknown'}, which is not an allowed " \
                "signer"
        return f"{head} {_SAID.get(self.status, 'cannot be verified')}" + (
            f" (key {self.key})" if self.key else "")

    def as_dict(self) -> dict[str, object]:
        return {"commit": self.commit, "status": self.status, "key": self.key or None,
                "signer": self.signer or None, "trusted": self.trusted}


class Trust:
    """The allowed signers. `ssh_signers`: a file in git's allowed-signers format
    (`principal key`); `gpg_keys`: armored OpenPGP public keys, imported into `home`."""

    def __init__(self, ssh_signers: Path | None, gpg_keys: Path | None, home: Path):
        if ssh_signers is None and gpg_keys is None:
            raise ConfigError("--verify-commits needs --allowed-signers (SSH keys) or "
                              "--allowed-gpg-keys (OpenPGP public keys)")
        for path in (ssh_signers, gpg_keys):
            if path is not None and not Path(path).is_file():
                raise ConfigError(f"{path}: no such file (the allowed signers)")
        self.ssh_signers = Path(ssh_signers).resolve() if ssh_signers else None
        self.gnupg_home = Path(home) / "gnupg"
        self.gnupg_home.mkdir(parents=True, exist_ok=True, mode=0o700)
        if gpg_keys is not None:
            done = subprocess.run(["gpg", "--batch", "--quiet", "--import", str(gpg_keys)],
                                  env={**os.environ, "GNUPGHOME": str(self.gnupg_home)},
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise ConfigError(f"{gpg_keys}: gpg cannot import these keys "
                                  f"({done.stderr.strip().splitlines()[-1:]})")

    def check(self, repo: git.Repo, commit: str) -> Signature:
        """Whether `commit` is signed by an allowed key, as `git verify-commit` decides."""
        config = ["-c", f"gpg.ssh.allowedSignersFile={self.ssh_signers or os.devnull}"]
        env = {**os.environ, "GNUPGHOME": str(self.gnupg_home)}
        top = str(repo.working_tree_dir or repo.git_dir)
        verified = subprocess.run(["git", *config, "verify-commit", commit], cwd=top, env=env,
                                  capture_output=True, text=True, timeout=60)
        shown = subprocess.run(["git", *config, "log", "-1",
                                "--format=%G?%x00%GK%x00%GS%x00%GF%x00%GP", commit], cwd=top,
                               env=env, capture_output=True, text=True, timeout=60).stdout
        status, key, signer, *prints = ([*shown.strip("\n").split("\0"), *[""] * 4])[:5]
        return Signature(commit, status or "N", key, signer.splitlines()[0] if signer else "",
                         trusted=verified.returncode == 0 and status in ("G", "U"),
                         fingerprints=tuple(dict.fromkeys(p for p in prints if p)))


def head_signature(root: Path, trust: Trust) -> Signature:
    """Who signed the HEAD of the checkout holding `root` (`plan` and `check` in CI); a
    folder outside Git has nothing signed (status N, commit `unknown`)."""
    try:
        repo = git.Repo(root, search_parent_directories=True)
        head = repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return Signature("unknown", "N")
    return trust.check(repo, head)
