"""The read-only web page over real HTTP (issue 30, item 1): a loop on the API emulator serves
its bundles, gates, rollouts and a page per bundle; `gitgate ui` serves the same from the
records on the API server; a token guards every page; a Secret's value never reaches one.
(The same page in a real browser: test_web_browser.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from datetime import timedelta

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.errors import KubeError, Reason
from gitgate.httpserver import EndpointServer, LoopEndpoints
from gitgate.loop import LoopSettings, Reconciler
from gitgate.output.webpages import Snapshot
from gitgate.output.webui import (
    COOKIE,
    Attempts,
    StateSource,
    WebUi,
    loop_source,
    session_value,
)
from gitgate.source.git import LocalCheckout
from tests.conftest import REPO_ROOT, write_files
from tests.support.http import free_port, get, until
from tests.support.looping import T0, Clock
from tests.support.webrepo import NS, web_repo

pytestmark = pytest.mark.integration
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 1s, "
           "progressDeadline: 3s}\n")
CANARY = "c4n4ry-wh4t-n0-p4ge-sh0ws"
TOKEN = "ui-t0ken-for-tests"


def secret(value: str) -> str:
    return (f"apiVersion: v1\nkind: Secret\nmetadata: {{name: web-db, namespace: {NS}}}\n"
            f"stringData: {{password: {value}}}\n")


def repo_with_everything(tmp_path, emulator):
    """web (rolled out to member1 then member2, with a Secret), `extra` held by a gate with
    an owner, and the flags that reach the emulator."""
    root, flags = web_repo(tmp_path, emulator, ROLLOUT)
    write_files(root, {
        "web/secret.yaml": secret(CANARY),
        "extra/bundle.yaml": "name: extra\ndependsOn: [ns]\n",
        "extra/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: extra, "
                         f"namespace: {NS}}}\ndata: {{k: v}}\n",
        "gates/freeze.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: "
                             "{name: freeze}\nspec: {bundles: [extra], reason: INC-42 db "
                             "migration, owner: team-payments}\n"})
    return root, flags


def halted_loop(root, flags, tools, clock: Clock | None = None) -> Reconciler:
    clock = clock or Clock(T0)
    loop = Reconciler(LocalCheckout(root), KubeCluster(load_client(flags[1])), tools,
                      LoopSettings(interval=timedelta(seconds=1), apply=ApplyOptions(now=T0)),
                      clock=clock)
    loop.tick()  # wave 1 (member1) released; the emulator's member1 never gets healthy
    for _ in range(4):  # past the 3 s deadline: halted
        clock.advance(seconds=2)
        loop.tick()
    loop.refresh_status()
    loop.state.leading = True  # as `run` marks the replica that holds the Lease
    return loop


def serve(pages: WebUi) -> tuple[EndpointServer, str]:
    server = EndpointServer(("127.0.0.1", 0), LoopEndpoints(
        ready=lambda: True, status=lambda: {"ok": True}, metrics=lambda: b"# metrics\n",
        trigger=lambda: None, webhook_secret=None, pages=pages)).start()
    return server, f"http://127.0.0.1:{server.port}"


def page(url: str, **headers: str) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def verdicts(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr data-bundle="([^"]+)">.*?data-verdict="(\w+)"', html, re.S))


def test_the_loop_serves_bundles_gates_rollouts_and_a_bundle_page(tmp_path, emulator, tools):
    root, flags = repo_with_everything(tmp_path, emulator)
    clock = Clock(T0)
    loop = halted_loop(root, flags, tools, clock)
    server, base = serve(WebUi(loop_source(loop, 1)))
    try:
        status, overview, headers = page(base + "/ui/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert verdicts(overview) == {"ns": "apply", "web": "halted", "extra": "held"}
        assert re.search(r'<tr data-bundle="web">.*?data-cluster="member1"', overview, re.S)

        gates = page(base + "/ui/gates")[1]
        active = gates.split("<h2>Upcoming</h2>")[0]
        assert 'data-gate="freeze"' in active and "INC-42 db migration" in active
        assert "team-payments" in active and 'href="/ui/bundles/extra"' in active

        rollouts = page(base + "/ui/rollouts")[1]
        assert 'data-rollout="web"' in rollouts and 'class="alert halted"' in rollouts
        assert "progressDeadline 3s" in rollouts and "member1" in rollouts

        web = page(base + "/ui/bundles/web")[1]
        assert "Secret shop/web-db" in web and "Deployment.apps shop/web" in web
        assert "RolloutHalted" in web  # its events, read from the API server
        assert page(base + "/ui/bundles/nothing")[1].count("No bundle named") == 1

        # a change: its field paths appear on the bundle's page, never its values
        write_files(root, {"web/secret.yaml": secret(CANARY + "-2"),
                           "web/app.yaml": (root / "web/app.yaml").read_text().replace(
                               "web:1", "web:2")})
        loop.request_pass()  # the folder is taken as it is: its revision does not move
        assert loop.tick() is not None
        web = page(base + "/ui/bundles/web")[1]
        change = web.split("<h2>Last change</h2>")[1].split("<h2>")[0]
        assert "Secret shop/web-db</code>: <code>.stringData</code>" in change
        assert ".spec.template.spec.containers" in change
        assert "web:2" not in change and "password" not in change

        for path in ("/ui/", "/ui/gates", "/ui/rollouts", "/ui/bundles/web",
                     "/ui/bundles/extra", "/ui/?name=web", "/ui/app.js"):
            body = page(base + path)[1]
            assert CANARY not in body, path
    finally:
        server.stop()


def test_a_standby_replica_shows_what_the_leader_recorded(tmp_path, emulator, tools):
    root, flags = repo_with_everything(tmp_path, emulator)
    halted_loop(root, flags, tools)
    standby = Reconciler(LocalCheckout(root), KubeCluster(load_client(flags[1])), tools,
                         LoopSettings(apply=ApplyOptions(now=T0)), clock=Clock(T0))
    assert not standby.state.leading and standby.state.inventories is None
    server, base = serve(WebUi(loop_source(standby, 1)))
    try:
        overview = page(base + "/ui/")[1]
        assert verdicts(overview) == {"ns": "apply", "web": "halted", "extra": "held"}
        assert "this replica stands by" in overview
        assert "team-payments" in page(base + "/ui/gates")[1]
    finally:
        server.stop()


def fixed_source() -> StateSource:
    snap = Snapshot(now=T0, inventories=(), dispatch={}, overview={}, origin="test")
    return StateSource(lambda: snap, lambda inv: [])


def test_a_token_guards_every_page_and_the_cookie_never_holds_it():
    server, base = serve(WebUi(fixed_source(), TOKEN.encode()))
    try:
        for path in ("/ui/", "/ui/gates", "/ui/rollouts", "/ui/bundles/web"):
            status, body, headers = page(base + path)
            assert status == 401 and 'action="/ui/login"' in body, path
            assert headers["WWW-Authenticate"].startswith("Bearer")
        assert page(base + "/ui/", Authorization="Bearer wrong")[0] == 401
        assert page(base + "/ui/", Authorization=f"Bearer {TOKEN}")[0] == 200
        assert page(base + "/ui/app.css")[0] == 200  # no state in the style sheet

        def sign_in(token: str) -> tuple[int, dict[str, str]]:
            request = urllib.request.Request(base + "/ui/login", data=f"token={token}".encode(),
                                             method="POST")
            opener = urllib.request.build_opener(NoRedirect)
            try:
                with opener.open(request, timeout=5) as answer:
                    return answer.status, dict(answer.headers)
            except urllib.error.HTTPError as exc:
                return exc.code, dict(exc.headers)

        assert sign_in("wrong")[0] == 401
        status, headers = sign_in(TOKEN)
        assert status == 303 and headers["Location"] == "/ui/"
        cookie = headers["Set-Cookie"].split(";")[0]
        assert cookie == f"{COOKIE}={session_value(TOKEN.encode())}" and TOKEN not in cookie
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        assert page(base + "/ui/gates", Cookie=cookie)[0] == 200
        assert page(base + "/ui/gates", Cookie=f"{COOKIE}=forged")[0] == 401
        # the machine endpoints are not the page's
        assert get(base + "/healthz")[0] == 200 and get(base + "/status")[0] == 200
    finally:
        server.stop()


def test_wrong_tokens_are_refused_for_the_rest_of_the_minute_past_ten():
    now = [0.0]
    server, base = serve(WebUi(fixed_source(), TOKEN.encode(),
                               Attempts(per_minute=10, clock=lambda: now[0])))
    cookie = f"{COOKIE}={session_value(TOKEN.encode())}"
    try:
        for guess in range(10):
            assert page(base + "/ui/", Authorization=f"Bearer guess-{guess}")[0] == 401
        # the guesser learns nothing more this minute, not even from the right token
        assert page(base + "/ui/", Authorization=f"Bearer {TOKEN}")[0] == 429
        request = urllib.request.Request(base + "/ui/login", data=f"token={TOKEN}".encode(),
                                         method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 429 and refused.value.headers["Retry-After"] == "60"
        assert page(base + "/ui/", Cookie=cookie)[0] == 200  # people signed in go on
        now[0] = 61.0
        assert page(base + "/ui/", Authorization=f"Bearer {TOKEN}")[0] == 200
    finally:
        server.stop()


def test_unreadable_records_are_a_503_that_says_why_and_a_bug_a_500():
    failures = [KubeError("connection refused: https://karmada:5443",
                          reason=Reason.API_UNREACHABLE),
                RuntimeError("a bug")]

    def failing() -> Snapshot:
        raise failures[0]

    server, base = serve(WebUi(StateSource(failing, lambda inv: [])))
    try:
        status, body, _ = page(base + "/ui/")
        assert status == 503 and "cannot read gitgate&#x27;s records: connection refused" in body
        assert 'id="main"' in body  # the open page's script swaps it in, and recovers later
        failures.pop(0)
        status, body, _ = page(base + "/ui/")
        assert status == 500 and "see gitgate's log" in body and "a bug" not in body
        assert page(base + "/ui/app.css")[0] == 200
    finally:
        server.stop()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_the_page_only_reads():
    server, base = serve(WebUi(fixed_source()))
    try:
        request = urllib.request.Request(base + "/ui/", data=b"x", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 405
        status, body, _ = page(base + "/ui/")
        assert status == 200 and "No bundle recorded yet" in body
    finally:
        server.stop()


def test_gitgate_ui_shows_what_the_loop_recorded_on_the_api_server(tmp_path, emulator, tools):
    root, flags = repo_with_everything(tmp_path, emulator)
    halted_loop(root, flags, tools)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "ui", *flags, "--listen", f"127.0.0.1:{port}",
         "--ui-refresh", "2s"], cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "ui.log").open("w"))
    base = f"http://127.0.0.1:{port}"
    try:
        until(lambda: get(base + "/ui/")[0] == 200, 30, "gitgate ui serves")
        overview = page(base + "/ui/")[1]
        assert verdicts(overview) == {"ns": "apply", "web": "halted", "extra": "held"}
        assert 'data-refresh="2"' in overview
        gates = page(base + "/ui/gates")[1]
        assert "team-payments" in gates and "recorded no overview" not in gates
        assert "progressDeadline 3s" in page(base + "/ui/rollouts")[1]
        assert "RolloutHalted" in page(base + "/ui/bundles/web")[1]
        assert all(CANARY not in page(base + p)[1] for p in ("/ui/", "/ui/bundles/web"))
    finally:
        process.terminate()
        assert process.wait(10) == 0
    assert "gitgate ui: http://127.0.0.1" in (tmp_path / "ui.log").read_text()
