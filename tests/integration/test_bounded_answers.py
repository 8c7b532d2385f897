"""Every request to the API server is bounded, whichever way it goes (the transport's own,
a watch, the leader Lease through the official client's generated API, the real CLI): a
deadline for the whole answer, not for each read; a cap on the answer, on one watch event
and on its headers; no content encoding it did not ask for; no redirect followed. Against
the emulator over real sockets, answering the request under test as a hostile server would
(`tests.support.hostile_answers`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc

import pytest

from gitgate.apiserver.apierrors import Timeouts
from gitgate.apiserver.lease import LeaseElector
from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.errors import KubeError, Reason
from tests.conftest import REPO_ROOT
from tests.kubeapi.server import KubeApiEmulator
from tests.support import hostile_answers as hostile
from tests.support.http import until

pytestmark = pytest.mark.integration

CAP = 1 << 20  # --max-answer-size in these tests: 1 MiB
BOUNDS = Timeouts(connect=2.0, read=1.0, max_answer=CAP)
CONFIGMAP = "/api/v1/namespaces/shop/configmaps/settings"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/gitgate-system/leases"


@pytest.fixture
def api(tmp_path):
    with KubeApiEmulator() as emulator:
        emulator.kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
        yield emulator


def cluster_of(api: KubeApiEmulator) -> KubeCluster:
    return KubeCluster(load_client(api.kubeconfig, timeouts=BOUNDS), timeouts=BOUNDS)


def read_settings(cluster: KubeCluster) -> tuple[KubeError, float]:
    """The ConfigMap read, which must fail: its error and how long it took."""
    cluster.resource_for("v1", "ConfigMap")  # discovery before the clock starts
    started = time.monotonic()
    with pytest.raises(KubeError) as failed:
        cluster.get("v1", "ConfigMap", "shop", "settings")
    return failed.value, time.monotonic() - started


@pytest.mark.parametrize("writer", [hostile.dripped_body, hostile.dripped_header],
                         ids=["body", "header"])
def test_an_answer_dripped_a_byte_at_a_time_fails_within_the_deadline(api, writer):
    """Each read comes within the 1 s timeout; the whole answer would take 8 s."""
    api.state.raw_answers.append(hostile.on("GET", CONFIGMAP, writer()))
    error, took = read_settings(cluster_of(api))
    assert error.reason is Reason.API_TIMEOUT and took < 4.0, (error.message, took)
    assert "timed out after 1s waiting for the whole answer to get configmaps settings" in (
        error.message) and "(--request-timeout)" in error.message


def test_a_header_that_never_ends_fails_at_the_header_cap(api):
    api.state.raw_answers.append(hostile.on("GET", CONFIGMAP, hostile.endless_header()))
    error, _ = read_settings(cluster_of(api))
    assert error.reason is Reason.API_ANSWER_TOO_LARGE, error.message
    assert "headers beyond what gitgate reads (65,536 bytes a line" in error.message


@pytest.mark.parametrize("chunked", [False, True], ids=["length announced", "chunked"])
def test_a_gibibyte_answer_fails_at_the_cap_and_is_not_held(api, chunked):
    sent = hostile.Sent()
    api.state.raw_answers.append(hostile.on("GET", CONFIGMAP,
                                            hostile.huge_body(1 << 30, sent, chunked=chunked)))
    cluster = cluster_of(api)
    tracemalloc.start()
    try:
        error, _ = read_settings(cluster)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.reason is Reason.API_ANSWER_TOO_LARGE, error.message
    assert error.message == (f"get configmaps settings in namespace shop: the answer from "
                             f"{api.url} is larger than 1 MiB (--max-answer-size); gitgate "
                             "stopped reading it")
    assert peak < 8 * CAP, peak
    # the client stopped reading: what went out is what the socket buffers took, at most
    until(lambda: sent.done, 10, "the server's write failing")
    assert sent.bytes < 64 * CAP, sent.bytes


def test_a_watch_event_without_end_fails_at_the_cap(api):
    sent = hostile.Sent()
    api.state.raw_answers.append(hostile.on("GET", "watch=1",
                                            hostile.endless_watch_line(64 * CAP, sent)))
    cluster = cluster_of(api)
    with pytest.raises(KubeError) as failed:
        list(cluster.watch("v1", "ConfigMap", "shop", seconds=30))
    assert failed.value.reason is Reason.API_ANSWER_TOO_LARGE, failed.value.message
    assert "watch configmaps in namespace shop: one event" in failed.value.message
    assert "larger than 1 MiB (--max-answer-size)" in failed.value.message
    until(lambda: sent.done, 10, "the server's write failing")
    assert sent.bytes < 32 * CAP, sent.bytes


def test_a_watch_dripping_blank_lines_ends_at_its_deadline(api):
    """A watch of 1 s may take 1 s more (the request timeout), not what the server likes."""
    api.state.raw_answers.append(hostile.on("GET", "watch=1", hostile.dripped_watch()))
    cluster = cluster_of(api)
    cluster.resource_for("v1", "ConfigMap")
    started = time.monotonic()
    with pytest.raises(KubeError) as failed:
        list(cluster.watch("v1", "ConfigMap", "shop", seconds=1))
    assert failed.value.reason is Reason.API_TIMEOUT, failed.value.message
    assert time.monotonic() - started < 5.0


def test_a_gzip_answer_to_an_identity_request_is_refused_not_decoded(api):
    seen = hostile.Sent()
    api.state.raw_answers.append(hostile.on("GET", CONFIGMAP, hostile.gzipped(200, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}), seen))
    error, _ = read_settings(cluster_of(api))
    assert error.reason is Reason.API_ANSWER_REFUSED, error.message
    assert "Content-Encoding 'gzip', which gitgate did not ask for" in error.message
    assert seen.headers[0]["accept-encoding"] == "identity"


def test_a_redirect_is_not_followed_and_is_named(api):
    api.state.raw_answers.append(hostile.on("GET", CONFIGMAP, hostile.redirect(
        "https://elsewhere.example.test/api/v1/namespaces/shop/configmaps/settings")))
    error, _ = read_settings(cluster_of(api))
    assert error.reason is Reason.API_REDIRECT and error.status == 307
    assert error.message == (
        f"get configmaps settings in namespace shop: {api.url} answered 307, a redirect to "
        "https://elsewhere.example.test/api/v1/namespaces/shop/configmaps/settings; gitgate "
        "follows no redirects: point the kubeconfig at the API server itself")


def with_bundles(api: KubeApiEmulator) -> KubeApiEmulator:
    """The emulator serving gitgate's Bundle CRD, as after a first apply."""
    from ruamel.yaml import YAML
    api.state.install_crd(YAML(typ="safe").load(
        (REPO_ROOT / "deploy" / "crds" / "bundles.gitgate.io.yaml").read_text()))
    return api


def gitgate(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT, env={**os.environ})


@pytest.mark.parametrize("command", [["get"], ["status"]])
def test_the_cli_names_a_redirect_of_the_bundle_list(api, command):
    with_bundles(api).state.raw_answers.append(hostile.on("GET", "/bundles", hostile.redirect(
        "http://127.0.0.1:1/apis/gitgate.io/v1alpha1/bundles")))
    result = gitgate(*command, "--kubeconfig", api.kubeconfig)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "answered 307, a redirect to http://127.0.0.1:1/apis/gitgate.io/v1alpha1/bundles" in (
        result.stderr)
    assert "gitgate follows no redirects: point the kubeconfig at the API server itself" in (
        result.stderr)
    assert "None" not in result.stderr
    assert "Traceback" not in result.stderr


def test_the_cli_names_the_cap_and_its_flag(api):
    sent = hostile.Sent()
    with_bundles(api).state.raw_answers.append(hostile.on("GET", "/bundles",
                                            hostile.huge_body(1 << 30, sent, chunked=True)))
    result = gitgate("get", "--kubeconfig", api.kubeconfig, "--max-answer-size", "2Mi")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "is larger than 2 MiB (--max-answer-size)" in result.stderr, result.stderr
    assert "gitgate stopped reading it" in result.stderr


def elector_problem(api: KubeApiEmulator, timeouts: Timeouts = BOUNDS) -> str:
    """What the leader election says of a Lease it cannot use, once it says anything."""
    elector = LeaseElector(load_client(api.kubeconfig, timeouts=timeouts), "gitgate-system",
                           "gitgate", "replica-0", lease_duration=4, renew_deadline=3,
                           retry_period=1).start()
    try:
        until(lambda: elector.problem is not None, 20, "the Lease's problem")
        assert not elector.is_leader()
        return str(elector.problem)
    finally:
        elector.stop()


def test_the_lease_names_a_redirect(api):
    api.state.raw_answers.append(hostile.on("GET", LEASES, hostile.redirect(
        "https://elsewhere.example.test/lease")))
    problem = elector_problem(api)
    assert problem.startswith("cannot read Lease gitgate-system/gitgate: get "
                              "leases.coordination.k8s.io gitgate in namespace gitgate-system")
    assert "answered 307, a redirect to https://elsewhere.example.test/lease" in problem


def test_the_lease_refuses_a_gzip_answer(api):
    api.state.raw_answers.append(hostile.on("GET", LEASES, hostile.gzipped(404, {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
        "code": 404})))
    problem = elector_problem(api)
    assert "Content-Encoding 'gzip', which gitgate did not ask for" in problem
    assert api.state.object("coordination.k8s.io", "leases", "gitgate-system", "gitgate") is None


def test_the_lease_request_has_a_deadline(api):
    api.state.raw_answers.append(hostile.on("GET", LEASES, hostile.dripped_body()))
    started = time.monotonic()
    problem = elector_problem(api)
    assert "timed out after 1s waiting for the whole answer" in problem
    assert time.monotonic() - started < 6.0
