"""Who signed a commit, checked by git itself (`git verify-commit`): SSH signatures against an
allowed-signers file (`ssh-keygen -Y verify`), OpenPGP ones against a keyring holding only the
allowed public keys (a private GNUPGHOME, so the machine's own keys and trust never count).

Who the signer *is* comes from machine-readable answers only, never from free text: for SSH,
the principals `ssh-keygen -Y find-principals` finds in the allowed-signers file for the
signing key, at the commit's time and again now (an entry whose `valid-before` has passed no
longer signs, however the commit is dated); for OpenPGP, the fingerprints of gpg's `VALIDSIG`
status line and the addresses (addr-spec, read by an RFC 5322 parser) of the verified primary
key's valid user ids. Nothing here decides what to apply; the loop's source does
(`source.git`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email import policy
from pathlib import Path
from typing import Any

import git

from gitgate.errors import ConfigError

# git's %G?: G good, U good with unknown validity (gpg: our keyring holds only allowed keys),
# X/Y good but expired (signature/key), R good but revoked key, E cannot be checked (no key),
# B bad, N none
_SAID = {"N": "is not signed", "B": "has a bad signature (the commit was changed after "
         "signing)", "R": "is signed by a revoked key", "X": "has an expired signature",
         "Y": "is signed by an expired key"}
_NOT_NOW = ("is signed by a key whose allowed-signers entry is not valid now (valid-before, "
            "valid-after)")
_SSH_ARMOR = "-----BEGIN SSH SIGNATURE-----"
_TIMEOUT = 60


@dataclass(frozen=True)
class Signature:
    commit: str
    status: str  # git's %G? (Y too when an SSH key's allowed-signers entry has expired now)
    key: str = ""  # the key's id or fingerprint, as git reports it
    signer: str = ""  # who the key belongs to, as git shows it (for people, never matched)
    trusted: bool = False
    fingerprints: tuple[str, ...] = ()  # OpenPGP: the signing key's and its primary key's
    principals: tuple[str, ...] = ()  # SSH: the allowed-signers principals of the key
    emails: tuple[str, ...] = ()  # OpenPGP: the addresses of the key's valid user ids
    note: str = ""  # why it is not trusted, when git's status does not say it

    def by_one_of(self, names: tuple[str, ...]) -> bool:
        """Trusted, and signed by one of `names`: an SSH principal, an OpenPGP user id's
        email (exactly; the domain in any case), or a key id or fingerprint (at least 16 hex
        digits, `0x` allowed; SSH: its `SHA256:` fingerprint)."""
        if not self.trusted:
            return False
        ids = [i.upper() for i in self.fingerprints]
        emails = {_email_key(e) for e in self.emails}
        for name in (n.strip() for n in names):
            hexed = name.upper().removeprefix("0X")
            if (name in self.principals or _email_key(name) in emails
                    or (self.principals and name == self.key)
                    or (len(hexed) >= 16 and all(c in "0123456789ABCDEF" for c in hexed)
                        and any(i.endswith(hexed) for i in ids))):
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
        return f"{head} {self.note or _SAID.get(self.status, 'cannot be verified')}" + (
            f" (key {self.key})" if self.key else "")

    def as_dict(self) -> dict[str, object]:
        return {"commit": self.commit, "status": self.status, "key": self.key or None,
                "signer": self.signer or None, "trusted": self.trusted}


def _email_key(address: str) -> str:
    """An address as compared: the local part exactly, the domain in any case."""
    local, at, domain = address.strip().rpartition("@")
    return f"{local}@{domain.lower()}" if at else address.strip()


def uid_address(uid: str) -> str | None:
    """The one address of an OpenPGP user id (`Name (comment) <addr>` or a bare address), as
    an RFC 5322 parser reads it; None when the user id is not exactly one clean address
    (a comment holding `<alice@...>` is a comment, not an address)."""
    try:
        header = policy.default.header_factory("to", uid)
    except (ValueError, IndexError, TypeError):
        return None
    addresses: tuple[Any, ...] = tuple(getattr(header, "addresses", ()))
    if header.defects or len(addresses) != 1 or len(getattr(header, "groups", ())) != 1:
        return None
    found = addresses[0]
    if not found.username or not found.domain:
        return None
    return str(found.addr_spec)


def stop_agents(folder: Path) -> None:
    """Stop the gpg daemons (gpg-agent, keyboxd, dirmngr) of every keyring under `folder`:
    gpg starts them on its own and they outlive the process that made the keyring."""
    if not Path(folder).is_dir() or shutil.which("gpgconf") is None:
        return
    for home in dict.fromkeys([Path(folder), *Path(folder).rglob("gnupg")]):
        if home.is_dir():
            subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"],
                           capture_output=True, timeout=_TIMEOUT, check=False)


@contextmanager
def keyring_folder(prefix: str) -> Iterator[Path]:
    """A temporary folder for the keyrings of one command; when it ends, the gpg daemons of
    every keyring made in it are stopped and the folder is removed."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        stop_agents(folder)
        shutil.rmtree(folder, ignore_errors=True)


class Trust:
    """The allowed signers. `ssh_signers`: a file in git's allowed-signers format
    (`principal [options] key`); `gpg_keys`: armored OpenPGP public keys, imported into
    `home`. `clock`: now, for the allowed-signers entries' `valid-before`/`valid-after`."""

    def __init__(self, ssh_signers: Path | None, gpg_keys: Path | None, home: Path,
                 clock: Callable[[], datetime] | None = None):
        if ssh_signers is None and gpg_keys is None:
            raise ConfigError("--verify-commits needs --allowed-signers (SSH keys) or "
                              "--allowed-gpg-keys (OpenPGP public keys)")
        for path in (ssh_signers, gpg_keys):
            if path is not None and not Path(path).is_file():
                raise ConfigError(f"{path}: no such file (the allowed signers)")
        self.ssh_signers = Path(ssh_signers).resolve() if ssh_signers else None
        self.clock = clock or (lambda: datetime.now(UTC))
        self.gnupg_home = Path(home) / "gnupg"
        self.gnupg_home.mkdir(parents=True, exist_ok=True, mode=0o700)
        if gpg_keys is not None:
            try:
                done = subprocess.run(["gpg", "--batch", "--quiet", "--import", str(gpg_keys)],
                                      env=self._env(), capture_output=True, text=True,
                                      timeout=_TIMEOUT)
            finally:
                self.close()  # the import started gpg-agent; verifying needs none
            if done.returncode != 0:
                raise ConfigError(f"{gpg_keys}: gpg cannot import these keys "
                                  f"({done.stderr.strip().splitlines()[-1:]})")

    def _env(self) -> dict[str, str]:
        return {**os.environ, "GNUPGHOME": str(self.gnupg_home)}

    def close(self) -> None:
        """Stop the gpg daemons of this keyring (safe to call more than once)."""
        stop_agents(self.gnupg_home)

    def check(self, repo: git.Repo, commit: str) -> Signature:
        """Whether `commit` is signed by an allowed key, as `git verify-commit` decides, and
        (SSH) by an entry of the allowed signers that is valid now as well."""
        config = ["-c", f"gpg.ssh.allowedSignersFile={self.ssh_signers or os.devnull}"]
        top = str(repo.working_tree_dir or repo.git_dir)
        verified = subprocess.run(["git", *config, "verify-commit", "--raw", commit], cwd=top,
                                  env=self._env(), capture_output=True, text=True,
                                  timeout=_TIMEOUT)
        shown = subprocess.run(["git", *config, "log", "-1",
                                "--format=%G?%x00%GK%x00%GS%x00%ct", commit], cwd=top,
                               env=self._env(), capture_output=True, text=True,
                               timeout=_TIMEOUT).stdout
        status, key, signer, stamp = ([*shown.strip("\n").split("\0"), *[""] * 3])[:4]
        first = signer.splitlines()[0] if signer else ""
        if verified.returncode != 0 or status not in ("G", "U"):
            return Signature(commit, status or "N", key, first)
        armored = _signature_of(repo, commit)
        if armored.startswith(_SSH_ARMOR):
            return self._ssh(commit, key, first, armored, stamp)
        return self._openpgp(commit, status, key, first, verified.stderr)

    def _ssh(self, commit: str, key: str, signer: str, armored: str, stamp: str) -> Signature:
        """The principals of the signing key, from entries valid both when the commit says it
        was made and now; none valid now: an expired key (status Y), not trusted."""
        then = datetime.fromtimestamp(int(stamp), UTC) if stamp.isdigit() else self.clock()
        with tempfile.TemporaryDirectory(prefix="gitgate-sig-") as folder:
            signature = Path(folder) / "commit.sig"
            signature.write_text(armored, encoding="utf-8")
            at_commit = self._principals(signature, then)
            now = self._principals(signature, self.clock())
        principals = tuple(p for p in at_commit if p in now)
        if not principals:
            return Signature(commit, "Y", key, signer, note=_NOT_NOW)
        return Signature(commit, "G", key, signer, trusted=True, principals=principals)

    def _principals(self, signature: Path, at: datetime) -> tuple[str, ...]:
        if self.ssh_signers is None:
            return ()
        found = subprocess.run(["ssh-keygen", "-Y", "find-principals", "-s", str(signature),
                                "-f", str(self.ssh_signers),
                                f"-Overify-time={at.astimezone(UTC):%Y%m%d%H%M%SZ}"],
                               capture_output=True, text=True, timeout=_TIMEOUT)
        if found.returncode != 0:
            return ()
        return tuple(line.strip() for line in found.stdout.splitlines() if line.strip())

    def _openpgp(self, commit: str, status: str, key: str, signer: str,
                 raw: str) -> Signature:
        """The fingerprints gpg's one VALIDSIG line names, and the addresses of the primary
        key's valid user ids in this keyring."""
        valid = [line.split()[2:] for line in raw.splitlines()
                 if line.startswith("[GNUPG:] VALIDSIG ")]
        if len(valid) != 1 or len(valid[0]) < 10:
            return Signature(commit, "E", key, signer)  # none, or more than one: unclear
        fields = valid[0]
        prints = tuple(dict.fromkeys((fields[0].upper(), fields[-1].upper())))
        listed = subprocess.run(["gpg", "--batch", "--with-colons", "--fixed-list-mode",
                                 "--list-keys", prints[-1]], env=self._env(),
                                capture_output=True, text=True, timeout=_TIMEOUT)
        emails = []
        for line in listed.stdout.splitlines():
            parts = line.split(":")
            if parts[0] != "uid" or len(parts) < 10 or parts[1] in ("r", "e", "i", "d", "n"):
                continue  # revoked, expired, invalid, disabled, not valid: not who signs
            address = uid_address(_unescape(parts[9]))
            if address is not None:
                emails.append(address)
        return Signature(commit, status, key, signer, trusted=True, fingerprints=prints,
                         emails=tuple(dict.fromkeys(emails)))


def _unescape(field: str) -> str:
    r"""A `--with-colons` field as text: gpg writes `:` and control characters as `\xNN`."""
    raw = field.encode("utf-8", errors="surrogateescape")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i:i + 2] == b"\\x" and i + 4 <= len(raw):
            try:
                out.append(int(raw[i + 2:i + 4], 16))
                i += 4
                continue
            except ValueError:
                pass
        out.append(raw[i])
        i += 1
    return out.decode("utf-8", errors="replace")


def _signature_of(repo: git.Repo, commit: str) -> str:
    """The armored signature in the commit object's `gpgsig` header (empty when none)."""
    try:
        text = str(repo.git.cat_file("commit", commit, strip_newline_in_stdout=False))
    except git.GitCommandError:
        return ""
    lines: list[str] = []
    for line in text.split("\n"):
        if not line:
            break  # the headers end at the first empty line
        if lines and line.startswith(" "):
            lines.append(line[1:])
        elif lines:
            break
        elif line.startswith("gpgsig "):
            lines.append(line[len("gpgsig "):])
    return "\n".join(lines) + "\n" if lines else ""


def head_signature(root: Path, trust: Trust) -> Signature:
    """Who signed the HEAD of the checkout holding `root` (`plan` and `check` in CI); a
    folder outside Git has nothing signed (status N, commit `unknown`)."""
    try:
        repo = git.Repo(root, search_parent_directories=True)
        head = repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return Signature("unknown", "N")
    return trust.check(repo, head)
