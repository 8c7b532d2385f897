"""Real places charts come from, for the chart-source tests: an HTTPS chart repository served
from a local folder (a thread, with a certificate of a test CA, optionally asking for a
user and password, logging every request), the CNCF distribution registry (Debian's
`docker-registry`, a process started and stopped by each test, TLS with the same CA, its
log in a file), and charts made and published with the real `helm`."""

from __future__ import annotations

import base64
import contextlib
import http.server
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

REGISTRY = "docker-registry"


def registry_binary() -> str:
    found = shutil.which(REGISTRY) or str(Path(sys.executable).parent / REGISTRY)
    if not Path(found).is_file():
        pytest.skip("docker-registry is not installed: `make setup` fetches it from Debian's "
                    "docker-registry package (tools/install_registry.py); without apt-get "
                    "and dpkg-deb the OCI chart tests cannot run")
    return found


def helm_binary() -> str:
    found = shutil.which("helm", path=str(Path(sys.executable).parent)) or shutil.which("helm")
    if not found:
        pytest.skip("helm is not installed (`make setup`)")
    return found


class ChartCA:
    """A CA of the test's own, its PEM written to `folder/ca.pem`."""

    def __init__(self, folder: Path):
        self.ca = trustme.CA()
        self.pem = folder / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.pem))
        self.server = self.ca.issue_cert("127.0.0.1", "localhost")
        self.cert = folder / "server.pem"
        self.key = folder / "server.key"
        self.server.cert_chain_pems[0].write_to_path(str(self.cert))
        for extra in self.server.cert_chain_pems[1:]:
            extra.write_to_path(str(self.cert), append=True)
        self.server.private_key_pem.write_to_path(str(self.key))

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server.configure_cert(context)
        return context


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def helm_env(home: Path) -> dict[str, str]:
    """helm with a home of its own (no user config, cache or registry login)."""
    home.mkdir(parents=True, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TZ")}
    return {**keep, "HOME": str(home), "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_CACHE_HOME": str(home / "cache"), "HELM_DATA_HOME": str(home / "data"),
            "HELM_REGISTRY_CONFIG": str(home / "registry.json")}


def helm(*args: str, home: Path, cwd: Path | None = None) -> str:
    done = subprocess.run([helm_binary(), *args], env=helm_env(home), cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
    return done.stdout


def make_chart(folder: Path, name: str, version: str, *, message: str = "hello",
               dependencies: str = "") -> Path:
    """A small chart: one ConfigMap saying `message` (a value) and the chart's version."""
    chart = folder / name
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(
        f"apiVersion: v2\nname: {name}\nversion: {version}\ntype: application\n"
        + (f"dependencies:\n{dependencies}" if dependencies else ""))
    (chart / "values.yaml").write_text(f"message: {message}\n")
    (chart / "templates" / "configmap.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: {{ .Release.Name }}-{{ .Chart.Name }}\n"
        "  labels:\n    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n"
        "data:\n  message: {{ .Values.message | quote }}\n"
        "  version: {{ .Chart.Version | quote }}\n")
    return chart


def package(chart: Path, into: Path, home: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    helm("package", str(chart), "--destination", str(into), home=home)
    version = next(line.split(":", 1)[1].strip() for line in
                   (chart / "Chart.yaml").read_text().splitlines()
                   if line.startswith("version:"))
    return into / f"{chart.name}-{version}.tgz"


class _Handler(http.server.SimpleHTTPRequestHandler):
    server: ChartRepo._Server  # type: ignore[name-defined]

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.server.owner.requests.append(self.path)
        wanted = self.server.owner.credentials
        if wanted is not None:
            token = base64.b64encode(f"{wanted[0]}:{wanted[1]}".encode()).decode()
            if self.headers.get("Authorization") != f"Basic {token}":
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        super().do_GET()


class ChartRepo:
    """An HTTPS chart repository: `folder`'s archives and an index.yaml helm made of them."""

    class _Server(http.server.ThreadingHTTPServer):
        owner: ChartRepo

    def __init__(self, folder: Path, ca: ChartCA, home: Path,
                 credentials: tuple[str, str] | None = None):
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.credentials = credentials
        self.requests: list[str] = []
        folder_text = str(folder)

        class Handler(_Handler):
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, directory=folder_text, **kwargs)  # type: ignore[arg-type]

        self.httpd = self._Server(("127.0.0.1", 0), Handler)
        self.httpd.owner = self
        self.httpd.socket = ca.server_context().wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}/charts"
        self.folder = folder / "charts"
        self.folder.mkdir(exist_ok=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def publish(self, archive: Path) -> None:
        """The archive (and its `.prov` when it has one) served, the index made again."""
        shutil.copy2(archive, self.folder / archive.name)
        provenance = archive.with_name(archive.name + ".prov")
        if provenance.exists():
            shutil.copy2(provenance, self.folder / provenance.name)
        helm("repo", "index", str(self.folder), "--url", self.url, home=self.home)

    def __enter__(self) -> ChartRepo:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


class Registry:
    """The distribution registry over TLS on a free port; `log` holds what it said."""

    def __init__(self, folder: Path, ca: ChartCA, home: Path):
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ca = ca
        self.home = home
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.log_file = folder / "registry.log"
        self.config = folder / "config.yml"
        self.config.write_text(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n"
            f"storage:\n  filesystem:\n    rootdirectory: {folder / 'data'}\n"
            "  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n"
            f"  tls:\n    certificate: {ca.cert}\n    key: {ca.key}\n")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def requests(self) -> list[str]:
        """The request lines of its access log (`"GET /v2/... HTTP/1.1" 200`)."""
        return [line for line in self.log.splitlines()
                if re.search(r'\] "(GET|HEAD|PUT|POST|PATCH|DELETE) /', line)]

    def __enter__(self) -> Registry:
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen([registry_binary(), "serve", str(self.config)],
                                            stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the registry stopped: {self.log}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                return self
            time.sleep(0.05)
        self.__exit__()
        raise AssertionError(f"the registry did not start: {self.log}")

    def __exit__(self, *_: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def push(self, archive: Path, path: str = "charts") -> str:
        """Push with the real helm; the chart's oci:// repository (without its name)."""
        url = f"oci://{self.host}/{path}"
        helm("push", str(archive), url, "--ca-file", str(self.ca.pem), home=self.home)
        return url


@contextlib.contextmanager
def chart_servers(tmp: Path) -> Iterator[tuple[ChartCA, ChartRepo, Registry]]:
    ca = ChartCA(tmp)
    home = tmp / "helm-home"
    with ChartRepo(tmp / "repo", ca, home) as repo, Registry(tmp / "registry", ca, home) as reg:
        yield ca, repo, reg


def allow(*entries: dict[str, object]) -> str:
    """gitgate.yaml's `charts.repositories`, one entry per mapping."""
    import json

    return "charts:\n  repositories:\n" + "".join(
        "    - " + json.dumps(entry) + "\n" for entry in entries)


def gitgate_cli(*argv: str, cache: Path, cwd: Path | None = None,
                timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, its chart store in `cache`."""
    env = {**os.environ, "GITGATE_CHART_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd or REPO_ROOT, env=env)


REPO_ROOT = Path(__file__).resolve().parents[2]


class ChartSigner:
    """A throwaway OpenPGP key (RSA, no passphrase) charts are signed with by the real
    `helm package --sign`; `pubring` (binary) and `armored` hold its public key. `close`
    stops the gpg daemons its keyring started."""

    def __init__(self, folder: Path, uid: str = "Charts <charts@example.com>"):
        import tempfile

        self.uid = uid
        self.home = Path(tempfile.mkdtemp(prefix="gg-chk-", dir="/tmp"))  # a short socket path
        self.gpg("--quick-gen-key", uid, "rsa2048", "sign", "never")
        folder.mkdir(parents=True, exist_ok=True)
        self.secring = folder / "secring.gpg"
        self.secring.write_bytes(self.gpg("--export-secret-keys", binary=True))
        self.pubring = folder / "pubring.gpg"
        self.pubring.write_bytes(self.gpg("--export", binary=True))
        self.armored = folder / "keyring.asc"
        self.armored.write_bytes(self.gpg("--armor", "--export", binary=True))

    def gpg(self, *argv: str, binary: bool = False) -> bytes:
        done = subprocess.run(["gpg", "--batch", "--passphrase", "", *argv],
                              capture_output=True, check=True, timeout=120,
                              env={**os.environ, "GNUPGHOME": str(self.home)})
        return done.stdout

    def package(self, chart: Path, into: Path, home: Path) -> Path:
        """`helm package --sign`: the archive, its `.prov` beside it."""
        into.mkdir(parents=True, exist_ok=True)
        email = self.uid.split("<", 1)[1].rstrip(">")
        helm("package", str(chart), "--destination", str(into), "--sign", "--key", email,
             "--keyring", str(self.secring), home=home)
        version = next(line.split(":", 1)[1].strip() for line in
                       (chart / "Chart.yaml").read_text().splitlines()
                       if line.startswith("version:"))
        return into / f"{chart.name}-{version}.tgz"

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "all"],
                       capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)
