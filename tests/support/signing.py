"""Signing keys made by the real `ssh-keygen` and `gpg` for a test, and signed commits."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

NEEDED = pytest.mark.skipif(not (shutil.which("gpg") and shutil.which("ssh-keygen")),
                            reason="gpg and ssh-keygen make the keys these tests sign with "
                                   "(Debian: gnupg, openssh-client)")


class Keys:
    """An allowed SSH key (alice), an allowed OpenPGP key (bob), an SSH key nobody allowed
    (mallory); the allowed signers' files as `gitgate run` takes them."""

    def __init__(self, folder: Path, ssh_names: tuple[str, ...] = ("alice", "mallory")):
        self.folder = folder
        for name in ssh_names:
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                            "-f", str(folder / name)], check=True)
        self.allowed_ssh = folder / "allowed_signers"
        self.allowed_ssh.write_text(f"alice@example.com {(folder / 'alice.pub').read_text()}")
        # a short path: gpg-agent's socket must fit in a Unix socket name
        self.gnupg = Path(tempfile.mkdtemp(prefix="gg-gpg-", dir="/tmp"))
        self.gpg("--quick-gen-key", "Bob <bob@example.com>", "ed25519", "sign", "never")
        listed = self.gpg("--list-keys", "--with-colons").stdout
        self.bob = next(line.split(":")[9] for line in listed.splitlines()
                        if line.startswith("fpr"))
        self.allowed_gpg = folder / "bob.asc"
        self.allowed_gpg.write_text(self.gpg("--armor", "--export", self.bob).stdout)
        self.openpgp = {"bob": self.bob}  # name: fingerprint, of the keys that sign as name

    def gpg_key(self, name: str, uid: str) -> str:
        """One more OpenPGP key, signing as `name`, whose one user id is `uid`; its
        fingerprint (`export` gives its public key)."""
        self.gpg("--quick-gen-key", uid, "ed25519", "sign", "never")
        listed = self.gpg("--list-keys", "--with-colons", f"={uid}").stdout
        self.openpgp[name] = [line.split(":")[9] for line in listed.splitlines()
                              if line.startswith("fpr")][-1]
        return self.openpgp[name]

    def export(self, *names: str) -> str:
        """The armored public keys of the OpenPGP keys `names`."""
        return self.gpg("--armor", "--export", *(self.openpgp[n] for n in names)).stdout

    def gpg(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(["gpg", "--batch", "--passphrase", "", *argv], check=True,
                              capture_output=True, text=True,
                              env={**os.environ, "GNUPGHOME": str(self.gnupg)})

    def signing(self, who: str | None) -> list[str]:
        """git's options to sign a commit as `who` (None: unsigned)."""
        if who is None:
            return []
        if who in self.openpgp:
            return ["-c", f"user.signingkey={self.openpgp[who]}", "-c", "gpg.format=openpgp"]
        return ["-c", "gpg.format=ssh", "-c", f"user.signingkey={self.folder / who}"]

    def close(self) -> None:
        subprocess.run(["gpgconf", "--kill", "all"], env={**os.environ,
                                                         "GNUPGHOME": str(self.gnupg)})
        shutil.rmtree(self.gnupg, ignore_errors=True)

    def commit(self, cwd: Path, who: str | None, message: str, date: str | None = None) -> None:
        """`git commit` of what is staged, signed as `who` (None: unsigned), dated `date`
        (an ISO 8601 time; None: now)."""
        signed = ["-S"] if who else []
        dated = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
        subprocess.run(["git", *self.signing(who), "commit", "-q", "--allow-empty", *signed,
                        "-m", message], cwd=cwd, check=True,
                       env={**os.environ, "GNUPGHOME": str(self.gnupg), **dated})


def allowed_signers(path: Path, folder: Path, *names: str) -> Path:
    """An allowed-signers file for the SSH keys `names` (made by Keys in `folder`)."""
    path.write_text("".join(f"{n}@example.com {(folder / f'{n}.pub').read_text()}"
                            for n in names))
    return path


def push_signed(upstream, keys: Keys, who: str | None, files: dict[str, str | None],
                what: str) -> str:
    """Write `files` (None: delete) in the upstream's work tree, commit them signed as `who`
    (None: unsigned) and force-push; returns the commit."""
    for rel, text in files.items():
        path = upstream.root / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    upstream.work.git.add("-A")
    keys.commit(upstream.root, who, what)
    upstream.work.git.push("origin", "main", "--force")
    return upstream.work.head.commit.hexsha
