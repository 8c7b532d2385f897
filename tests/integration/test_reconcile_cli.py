"""`gitgate reconcile [--wait]` against a running loop's endpoint over HTTP: a pass runs though
nothing is due; a wrong secret is refused; a standby does not take the request."""

from __future__ import annotations

import threading

import pytest

from gitgate.cli import main
from gitgate.endpoints.routes import LoopEndpoints
from gitgate.endpoints.server import EndpointServer
from gitgate.output.statusviews import loop_document
from tests.support.looping import Upstream, reconciler, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def running(kube, tools, tmp_path):
    upstream = Upstream(tmp_path, kube)
    loop = reconciler(upstream, kube, tools, tmp_path, interval=600)  # no pass falls due
    leads = {"value": True}
    server = EndpointServer(("127.0.0.1", 0), LoopEndpoints(
        ready=lambda: loop.state.ready, status=lambda: loop_document(loop.published),
        metrics=loop.metrics.exposition, trigger=loop.trigger, webhook_secret=b"s3cret",
        request_pass=loop.request_pass, leading=lambda: leads["value"])).start()
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    wait_for(lambda: loop.state.passes == 1)
    yield loop, f"http://127.0.0.1:{server.port}", secret, leads
    loop.stop.set()
    loop.wake.set()
    thread.join(10)
    server.stop()


def test_reconcile_wait_runs_a_pass_though_none_is_due(running, capsys):
    loop, url, secret, _ = running
    code = main(["reconcile", "--url", url, "--secret-file", str(secret), "--wait",
                 "--timeout", "30s"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert loop.state.passes == 2 and loop.state.last_reason == "requested"
    assert f"reconciled revision {loop.state.revision[:12]} (requested)" in out


def test_a_wrong_secret_is_refused(running, tmp_path, capsys):
    loop, url, _, _ = running
    wrong = tmp_path / "wrong"
    wrong.write_text("guess\n")
    assert main(["reconcile", "--url", url, "--secret-file", str(wrong)]) == 2
    assert "refused the request (401)" in capsys.readouterr().err
    assert loop.state.passes == 1


def test_a_standby_does_not_take_it(running, capsys):
    loop, url, secret, leads = running
    leads["value"] = False
    assert main(["reconcile", "--url", url, "--secret-file", str(secret),
                 "--timeout", "2s"]) == 2
    assert "(503)" in capsys.readouterr().err
    assert loop.state.passes == 1


def test_nothing_listening_says_where(tmp_path, capsys):
    secret = tmp_path / "secret"
    secret.write_text("x")
    assert main(["reconcile", "--url", "http://127.0.0.1:9", "--secret-file",
                 str(secret)]) == 2
    assert "cannot reach gitgate at http://127.0.0.1:9/reconcile" in capsys.readouterr().err
