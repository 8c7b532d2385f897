"""Answers as a server may frame them, split, cut short or garbled, read by the one HTTP
stack (urllib3, `apiserver.exchange`) over real sockets: what is whole is read whole, what
is not is an error naming the server, never a half answer taken for a whole one."""

from __future__ import annotations

import pytest

from gitgate.apiserver.apierrors import RetryPolicy, Timeouts
from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.errors import KubeError, Reason
from tests.kubeapi.server import KubeApiEmulator
from tests.support import hostile_answers as hostile

pytestmark = pytest.mark.integration
PATH = "/api/v1/namespaces"


def answer_of(raw: bytes, *, byte_by_byte: bool = False) -> hostile.Writer:
    def write(send: hostile.Send) -> None:
        for index in range(len(raw)) if byte_by_byte else [None]:
            send(raw if index is None else raw[index:index + 1])
    return write


@pytest.fixture
def cluster(tmp_path):
    with KubeApiEmulator() as api:
        bounds = Timeouts(connect=2.0, read=5.0)
        client = load_client(str(api.write_kubeconfig(tmp_path / "kubeconfig")), timeouts=bounds)
        made = KubeCluster(client, timeouts=bounds, retry=RetryPolicy(attempts=1))
        made.api_state = api.state
        yield made


def answered(cluster, raw: bytes, **how: bool):
    cluster.api_state.raw_answers.append(hostile.on("GET", PATH, answer_of(raw, **how)))
    return cluster.request("GET", PATH)


def test_a_chunked_answer_sent_a_byte_at_a_time_is_read_whole(cluster):
    assert answered(cluster, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"5\r\n{\"a\":\r\n5\r\n true\r\n1\r\n}\r\n0\r\n\r\n",
                    byte_by_byte=True) == (200, {"a": True})


def test_an_interim_answer_is_skipped(cluster):
    assert answered(cluster, b"HTTP/1.1 100 Continue\r\n\r\n"
                             b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}") == (200, {})


def test_a_body_the_close_ends_is_read_to_the_end(cluster):
    assert answered(cluster, b"HTTP/1.1 200 OK\r\n\r\n[1, 2]") == (200, [1, 2])


def test_an_answer_cut_short_is_no_answer(cluster):
    with pytest.raises(KubeError) as cut:
        answered(cluster, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"a\"")
    assert cut.value.reason is Reason.API_UNREACHABLE
    assert "closed before an answer" in cut.value.message


@pytest.mark.parametrize("garbage", [b"SSH-2.0-OpenSSH_9.6\r\n\r\n", b"HTTP/1.1 abc OK\r\n\r\n"])
def test_bytes_that_are_no_answer_are_refused(cluster, garbage):
    with pytest.raises(KubeError) as refused:
        answered(cluster, garbage)
    assert refused.value.reason is Reason.API_UNREACHABLE


@pytest.mark.parametrize("raw, detail", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "Content-Length '-3'"),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
     "status 101"),
], ids=["a negative length", "a switch of protocol"])
def test_an_answer_framed_as_none_is_refused(cluster, raw, detail):
    with pytest.raises(KubeError) as refused:
        answered(cluster, raw)
    assert refused.value.reason is Reason.API_ANSWER_REFUSED
    assert refused.value.message.endswith(f"answered what is no HTTP/1.1 answer to it ({detail})")
