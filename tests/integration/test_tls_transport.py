"""gitgate's requests over TLS and kept-alive connections (`apiserver.exchange`), against
the emulator served over https with certificates made for the test (trustme): the
kubeconfig's certificate authority, client certificate, `tls-server-name` and
`insecure-skip-tls-verify` are honoured as the official client honours them, a wrong
authority is one clean line, connections are kept and reused, and one the server closed
while idle is replaced, not failed."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import trustme

from gitgate.apiserver.apierrors import RetryPolicy
from gitgate.apiserver.exchange import bounded_pool
from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.errors import KubeError
from tests.conftest import REPO_ROOT
from tests.kubeapi.server import KubeApiEmulator
from tests.support.shoprepo import shop_repo

pytestmark = pytest.mark.integration


def wait_until(done, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the emulator did not close the connection"
        time.sleep(0.01)


def gitgate(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "default"}  # an unclosed socket would show
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT, env=env)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def serving(ca: trustme.CA, *names: str, client_ca: trustme.CA | None = None) -> ssl.SSLContext:
    """The emulator's TLS context: a certificate for `names`, and client certificates
    asked for (and checked against `client_ca`) when one is given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert(*names).configure_cert(context)
    if client_ca is not None:
        client_ca.configure_trust(context)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


@pytest.fixture
def repo(tmp_path):
    return shop_repo(tmp_path / "repo")


def test_apply_and_status_over_tls_with_the_kubeconfigs_authority(ca, repo, tmp_path):
    with KubeApiEmulator(tls=serving(ca, "127.0.0.1")) as api:
        assert api.url.startswith("https://")
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig", cluster={
            "certificate-authority-data": api.pem_data(ca.cert_pem.bytes())})
        applied = gitgate("apply", str(repo), "--kubeconfig", str(kubeconfig))
        assert applied.returncode == 0, applied.stderr
        assert api.state.object("", "configmaps", "shop", "settings")["data"] == {"mode": "one"}
        status = gitgate("status", "--kubeconfig", str(kubeconfig))
        assert status.returncode == 0, status.stderr
        assert "app" in status.stdout
        assert "ResourceWarning" not in applied.stderr + status.stderr


def test_the_client_certificate_of_the_kubeconfig_is_presented(ca, tmp_path):
    clients = trustme.CA()
    client = clients.issue_cert("gitgate@example.test", common_name="gitgate-client")
    with KubeApiEmulator(tls=serving(ca, "127.0.0.1", client_ca=clients)) as api:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig", cluster={
            "certificate-authority-data": api.pem_data(ca.cert_pem.bytes())}, user={
            "client-certificate-data": api.pem_data(client.cert_chain_pems[0].bytes()),
            "client-key-data": api.pem_data(client.private_key_pem.bytes())})
        cluster = KubeCluster(load_client(str(kubeconfig)))
        cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        assert "gitgate-client" in api.state.tls_clients


def test_another_authority_is_one_clean_line(ca, tmp_path):
    with KubeApiEmulator(tls=serving(ca, "127.0.0.1")) as api:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig", cluster={
            "certificate-authority-data": api.pem_data(trustme.CA().cert_pem.bytes())})
        result = gitgate("status", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert f"TLS handshake with {api.url} failed" in lines[0]
    assert "Traceback" not in result.stderr and "test-token-not-secret" not in result.stderr


def test_tls_server_name_names_the_certificate_to_expect(ca, tmp_path):
    with KubeApiEmulator(tls=serving(ca, "kube.example.test")) as api:
        authority = {"certificate-authority-data": api.pem_data(ca.cert_pem.bytes())}
        named = api.write_kubeconfig(tmp_path / "named", cluster={
            **authority, "tls-server-name": "kube.example.test"})
        unnamed = api.write_kubeconfig(tmp_path / "unnamed", cluster=authority)
        assert gitgate("status", "--kubeconfig", str(named)).returncode == 0
        refused = gitgate("status", "--kubeconfig", str(unnamed))
    assert refused.returncode == 2 and "TLS handshake" in refused.stderr


def test_insecure_skip_tls_verify_connects_without_a_warning(ca, tmp_path):
    """The kubeconfig asks for it: connected, and no warning on every command (kubectl
    gives none either)."""
    with KubeApiEmulator(tls=serving(trustme.CA(), "127.0.0.1")) as api:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig",
                                          cluster={"insecure-skip-tls-verify": True})
        result = gitgate("status", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 0, result.stderr
    assert "TLS verification" not in result.stderr
    assert "InsecureRequestWarning" not in result.stderr


def test_connections_are_kept_and_reused_across_requests_and_threads(ca, tmp_path):
    with KubeApiEmulator(tls=serving(ca, "127.0.0.1")) as api:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig", cluster={
            "certificate-authority-data": api.pem_data(ca.cert_pem.bytes())})
        client = load_client(str(kubeconfig))
        cluster = KubeCluster(client)
        cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})

        def write(index: int) -> None:
            cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": f"c{index}", "namespace": "shop"}, "data": {"i": str(index)}})

        for _ in range(3):  # each round on new threads, as a pass's stages are
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(write, range(40)))
        assert all(api.state.object("", "configmaps", "shop", f"c{i}") for i in range(40))
        # 121 requests: at most one connection per request in flight at once
        assert api.state.connections_opened <= 4 + 1, api.state.connections_opened


def test_a_connection_the_server_closed_while_idle_is_replaced(tmp_path):
    with KubeApiEmulator() as api:
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        # one attempt per request: the retry policy cannot hide a request that failed
        cluster = KubeCluster(load_client(str(kubeconfig)), retry=RetryPolicy(attempts=1))
        cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        api.state.drop_kept_alive = True
        opened = api.state.connections_opened
        for index in range(5):  # one connection at a time, each closed after its answer
            cluster.apply({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": f"ns{index}"}})
            wait_until(lambda: api.state.connections_closed == api.state.connections_opened)
        assert api.state.connections_opened == opened + 4  # the first was still open
        assert all(api.state.object("", "namespaces", "", f"ns{i}") for i in range(5))


def emulator(tls: bool, ca: trustme.CA) -> KubeApiEmulator:
    return KubeApiEmulator(tls=serving(ca, "127.0.0.1") if tls else None)


def kubeconfig_for(api: KubeApiEmulator, tmp_path, ca: trustme.CA):
    cluster = ({"certificate-authority-data": api.pem_data(ca.cert_pem.bytes())}
               if api.url.startswith("https:") else {})
    return api.write_kubeconfig(tmp_path / "kubeconfig", cluster=cluster)


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_request_the_server_closes_its_kept_connection_on_is_sent_again_once(ca, tmp_path,
                                                                               tls):
    """The race no check before sending can close: the server's idle timeout runs out as
    the request comes, and it closes the connection without reading it. The request goes
    again at once on a new connection, whatever the retry policy (here: no retry)."""
    with emulator(tls, ca) as api:
        client = load_client(str(kubeconfig_for(api, tmp_path, ca)))
        cluster = KubeCluster(client, retry=RetryPolicy(attempts=1))
        cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
        api.state.close_when_reused = True  # each connection answers one request only
        for index in range(5):
            cluster.apply({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": f"ns{index}"}})
        assert all(api.state.object("", "namespaces", "", f"ns{i}") for i in range(5))
        pool = bounded_pool(client)
        assert api.state.requests_unanswered == 5 and pool.resent == 5


def test_a_create_is_not_sent_again_when_its_connection_closes_unanswered(ca, tmp_path):
    """A POST's server may have acted before it closed: no second send, the retry policy
    decides (here: no retry), and the error says what happened."""
    with emulator(False, ca) as api:
        client = load_client(str(kubeconfig_for(api, tmp_path, ca)))
        cluster = KubeCluster(client, retry=RetryPolicy(attempts=1))
        api.state.close_when_reused = True
        cluster.request("GET", "/api/v1/namespaces")  # opens the connection the POST reuses
        with pytest.raises(KubeError, match="closed before an answer"):
            cluster.request("POST", "/api/v1/namespaces", body={
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "made"}})
        pool = bounded_pool(client)
        assert pool.resent == 0
        assert api.state.object("", "namespaces", "", "made") is None


def test_a_request_failing_twice_unanswered_is_the_retry_policy_s(ca, tmp_path):
    """Sent again once only: a server that closes every connection unanswered is its
    trouble, told by the retry policy's error."""
    with emulator(False, ca) as api:
        client = load_client(str(kubeconfig_for(api, tmp_path, ca)))
        cluster = KubeCluster(client, retry=RetryPolicy(attempts=1))
        cluster.request("GET", "/api/v1/namespaces")
        api.state.close_every_request = True
        with pytest.raises(KubeError, match="closed before an answer"):
            cluster.request("GET", "/api/v1/namespaces")
        pool = bounded_pool(client)
        assert pool.resent == 1
        assert api.state.requests_unanswered == 2
