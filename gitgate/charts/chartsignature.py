"""A chart's provenance, where the platform asks for it (`verify: true` on a chart repository
or registry in gitgate.yaml): its provenance file (a chart repository's `<archive>.prov`, a
registry's provenance layer) checked against the archive by helm's own
verification (`helm verify --keyring`), the keyring read from where the allow-list names it
(a file on gitgate's host, or a Secret's `keyring` key; binary or ASCII-armored). A chart
that does not verify is not used. Runs offline: helm gets a home of its own and no network
is needed."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from gitgate.charts.credentials import SecretReader
from gitgate.errors import ChartError, Reason
from gitgate.model.chartspec import ChartRef, ChartRepository

MAX_KEYRING_BYTES = 1 << 20
VERIFY_TIMEOUT_S = 60.0
_ARMOR = b"-----BEGIN PGP"


def dearmored(data: bytes) -> bytes:
    """OpenPGP packets from an ASCII-armored keyring (every block in it); `data` itself when
    it is not armored. Raises ValueError for armor that does not decode."""
    if not data.lstrip().startswith(_ARMOR):
        return data
    packets: list[bytes] = []
    body: list[str] = []
    inside = headers = False
    for raw in data.decode("ascii", errors="strict").splitlines():
        line = raw.strip()
        if line.startswith("-----BEGIN PGP"):
            inside, headers, body = True, True, []
        elif line.startswith("-----END PGP"):
            packets.append(base64.b64decode("".join(body), validate=True))
            inside = False
        elif inside and headers:
            headers = ":" in line  # armor headers end at the first line without one
            if not headers and line:
                body.append(line)
        elif inside and line and not line.startswith("="):
            body.append(line)
    if not packets:
        raise ValueError("no armored block ends")
    return b"".join(packets)


def _helm() -> str | None:
    return (os.environ.get("GITGATE_HELM") or shutil.which("helm", path=str(
        Path(sys.executable).parent)) or shutil.which("helm"))


class ProvenanceChecker:
    """`helm verify` of an archive and its provenance file; each (archive, provenance,
    keyring) verified once per process."""

    def __init__(self, secret_reader: SecretReader | None = None, helm: str | None = None):
        self.secrets = secret_reader
        self.helm = helm
        self._verified: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    def keyring(self, entry: ChartRepository) -> bytes:
        if entry.keyring_file is not None:
            where = f"the keyring file of {entry.label} ({entry.keyring_file})"
            try:
                data = Path(entry.keyring_file).read_bytes()[:MAX_KEYRING_BYTES]
            except OSError:
                raise ChartError(f"{where} cannot be read", reason=Reason.CHART_UNVERIFIED) \
                    from None
        else:
            where = f"the Secret {entry.keyring_secret} (keyring of {entry.label})"
            if self.secrets is None or entry.keyring_secret is None:
                raise ChartError(f"{where} is read from the API server: run with "
                                 "--kubeconfig, or name a file instead",
                                 reason=Reason.CHART_UNVERIFIED)
            try:
                data = self.secrets(entry.keyring_secret)["keyring"].encode()
            except Exception:  # what the API said may quote the request: not repeated
                raise ChartError(f"{where} cannot be read (it must hold the key `keyring`)",
                                 reason=Reason.CHART_UNVERIFIED) from None
        try:
            return dearmored(data)
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise ChartError(f"{where} is not an OpenPGP keyring",
                             reason=Reason.CHART_UNVERIFIED) from None

    def check(self, entry: ChartRepository, ref: ChartRef, version: str, archive: bytes,
              provenance: bytes) -> None:
        """Return when `provenance` verifies `archive` with the entry's keyring; else
        ChartError (ChartUnverified) saying what helm said."""
        keyring = self.keyring(entry)
        key = (hashlib.sha256(archive).hexdigest(), hashlib.sha256(provenance).hexdigest(),
               hashlib.sha256(keyring).hexdigest())
        with self._lock:
            if key in self._verified:
                return
        helm = self.helm or _helm()
        if helm is None:
            raise ChartError(f"{ref.where} {version}: {entry.label} asks for verify: true, and "
                             "helm, which verifies provenance files, is not installed",
                             reason=Reason.CHART_UNVERIFIED)
        with tempfile.TemporaryDirectory(prefix="gitgate-prov-") as scratch:
            folder = Path(scratch)
            name = f"{ref.chart}-{version}.tgz"  # the name the provenance file signs
            (folder / name).write_bytes(archive)
            (folder / f"{name}.prov").write_bytes(provenance)
            (folder / "keyring.gpg").write_bytes(keyring)
            home = folder / "home"
            env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
                   "HELM_CONFIG_HOME": str(home / "config"),
                   "HELM_CACHE_HOME": str(home / "cache"),
                   "HELM_DATA_HOME": str(home / "data")}
            try:
                done = subprocess.run([helm, "verify", "--keyring", str(folder / "keyring.gpg"),
                                       str(folder / name)], env=env, cwd=folder,
                                      capture_output=True, text=True, timeout=VERIFY_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ChartError(f"{ref.where} {version}: helm verify did not run "
                                 f"({type(exc).__name__})",
                                 reason=Reason.CHART_UNVERIFIED) from None
            said = " ".join(done.stderr.replace(str(folder) + "/", "").split())[:300]
        if done.returncode != 0:
            raise ChartError(f"{ref.where} {version}: its provenance file does not verify "
                             f"with the keyring of {entry.label} ({said or 'helm verify failed'}"
                             "); nothing of it is used", reason=Reason.CHART_UNVERIFIED)
        with self._lock:
            self._verified.add(key)
