"""Notifications (issue 30, item 4) through apprise to a local HTTP receiver (apprise's
`json://` target, a generic webhook): a halted rollout is told exactly once, naming the
bundle, the cluster and the reason; later passes of the same halt tell nothing; a receiver
that is down never holds a pass; the URL file is checked by line, never echoing a URL."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.errors import ConfigError
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.source.localgit import LocalCheckout
from gitgate.status.notify import Message, Notifier, apprise_sender, read_urls
from tests.support.looping import T0, Clock, wait_for
from tests.support.webrepo import web_repo

pytestmark = pytest.mark.integration
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 1s, "
           "progressDeadline: 3s}\n")


class Receiver:
    """A webhook on loopback that keeps every JSON body posted to it."""

    def __init__(self) -> None:
        received: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                received.append(json.loads(self.rfile.read(length) or b"{}"))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.received = received
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver():
    made = Receiver()
    yield made
    made.server.shutdown()


def test_a_halted_rollout_is_told_once_with_bundle_cluster_and_reason(tmp_path, emulator,
                                                                      tools, receiver):
    root, flags = web_repo(tmp_path, emulator, ROLLOUT)
    clock = Clock(T0)
    loop = Reconciler(LocalCheckout(root), KubeCluster(load_client(flags[1])), tools,
                      LoopSettings(interval=timedelta(seconds=1), apply=ApplyOptions(now=T0)),
                      clock=clock, notifier=Notifier(apprise_sender([receiver.url])))
    assert loop.tick() is not None  # wave 1 (member1) released; member1 never gets healthy
    for _ in range(4):  # past the deadline: halted; then the same halt, pass after pass
        clock.advance(seconds=2)
        loop.tick()
    assert {b.bundle: b.verdict for b in loop.state.last_result.bundles}["web"] == "halted"
    loop.notifier.drain()
    wait_for(lambda: len(receiver.received) >= 1, timeout=10)
    halted = [m for m in receiver.received if "RolloutHalted" in m.get("title", "")]
    assert len(halted) == 1, receiver.received
    [message] = halted
    assert message["title"] == "gitgate: web: RolloutHalted"
    assert "member1" in message["message"] and "progressDeadline 3s" in message["message"]
    assert message["type"] == "warning"
    assert loop.notifier.sent == len(receiver.received)


def test_a_receiver_that_is_down_never_holds_a_pass():
    """apprise gets connection refused: offering returned at once, the send is counted as
    failed, and nothing is raised into the caller."""
    sent = Notifier(apprise_sender(["json://127.0.0.1:9/nobody"]))
    sent.offer([Message("k", "gitgate: x", "body")])
    sent.drain()
    wait_for(lambda: sent.failed == 1, timeout=30)
    sent.close()


def test_each_message_goes_once_and_the_rate_is_bounded():
    got: list[Message] = []
    now = [0.0]
    notifier = Notifier(lambda m: got.append(m) is None, per_minute=2, clock=lambda: now[0])
    first = [Message(f"k{i}", f"t{i}", "b") for i in range(4)]
    notifier.offer(first)
    notifier.offer(first[:1])  # the same transition again: dropped
    notifier.drain()
    wait_for(lambda: notifier.sent + notifier.dropped == 4, timeout=10)
    assert [m.key for m in got] == ["k0", "k1"] and notifier.dropped == 2
    now[0] = 61.0
    notifier.offer([Message("k9", "t9", "b")])
    notifier.drain()
    wait_for(lambda: len(got) == 3, timeout=10)
    assert "2 more notification(s) were not sent" in got[2].body
    notifier.close()


def test_a_url_file_is_checked_line_by_line_without_echoing_a_url(tmp_path):
    good = tmp_path / "urls"
    good.write_text("# team\njson://127.0.0.1:9/x\n\nslack://T000/B000/XXXXsecrettoken\n")
    assert len(read_urls(good)) == 2
    bad = tmp_path / "bad"
    bad.write_text("json://127.0.0.1:9/x\nnot-a-url-secrettoken\n")
    with pytest.raises(ConfigError) as caught:
        read_urls(bad)
    assert f"{bad}:2 is not a notification URL" in caught.value.message
    assert "secrettoken" not in caught.value.message
