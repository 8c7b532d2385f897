"""The read-only web page over real HTTP (issue 30, item 1): a loop on the API emulator serves
its bundles, gates, rollouts and a page per bundle; `gitgate ui` serves the same from the
records on the API server; a token guards every page; a Secret's value never reaches one.
(The same page in a real browser: test_web_browser.py.)"""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
import urllib.request
from datetime import timedelta
from email.message import Message

import pytest

from gitgate.apiserver.transport import load_client
from gitgate.apiserver.verbs import KubeCluster
from gitgate.apply.work import ApplyOptions
from gitgate.cli.run import page_source
from gitgate.endpoints.routes import LoopEndpoints
from gitgate.endpoints.server import EndpointServer
from gitgate.endpoints.signin import Sessions, Throttle, TokenFile
from gitgate.errors import KubeError, Reason
from gitgate.loop.reconciler import Reconciler
from gitgate.loop.schedule import LoopSettings
from gitgate.output.weblayout import Snapshot
from gitgate.output.webui import COOKIE, StateSource, WebUi
from gitgate.source.localgit import LocalCheckout
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
    loop.observer.refresh_status()
    loop.state.leading = True  # as `run` marks the replica that holds the Lease
    loop.publish()  # as `run` does at the end of each turn
    return loop


def serve(pages: WebUi) -> tuple[EndpointServer, str]:
    server = EndpointServer(("127.0.0.1", 0), LoopEndpoints(
        ready=lambda: True, status=lambda: {"ok": True}, metrics=lambda: b"# metrics\n",
        trigger=lambda: None, webhook_secret=None, pages=pages.routes())).start()
    return server, f"http://127.0.0.1:{server.port}"


def page(url: str, **headers: str) -> tuple[int, str, Message]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read().decode(), answer.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers


def verdicts(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr data-bundle="([^"]+)">.*?data-verdict="(\w+)"', html, re.S))


def test_the_loop_serves_bundles_gates_rollouts_and_a_bundle_page(tmp_path, emulator, tools):
    root, flags = repo_with_everything(tmp_path, emulator)
    clock = Clock(T0)
    loop = halted_loop(root, flags, tools, clock)
    server, base = serve(WebUi(page_source(loop, 1)))
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
        loop.observer.after_tick(True)
        loop.publish()
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


def test_the_page_shows_one_published_turn_never_a_pass_half_way(tmp_path, emulator, tools):
    """A pass changes the loop's state piece by piece (its plan and overview, then the read of
    Karmada after it); the page shows what the last turn of `run` published, whole: until
    the next one is published, the lifted gate is still listed beside the verdict it
    held."""
    root, flags = repo_with_everything(tmp_path, emulator)
    loop = halted_loop(root, flags, tools)
    server, base = serve(WebUi(page_source(loop, 1)))
    try:
        (root / "gates/freeze.yaml").unlink()
        loop.request_pass()
        assert loop.tick() is not None  # the pass ran; Karmada is not read again yet
        assert verdicts(page(base + "/ui/")[1])["extra"] == "held"
        assert 'data-gate="freeze"' in page(base + "/ui/gates")[1]
        loop.observer.after_tick(True)
        loop.publish()
        assert verdicts(page(base + "/ui/")[1])["extra"] == "apply"
        assert 'data-gate="freeze"' not in page(base + "/ui/gates")[1]
    finally:
        server.stop()


def test_a_standby_replica_shows_what_the_leader_recorded(tmp_path, emulator, tools):
    root, flags = repo_with_everything(tmp_path, emulator)
    halted_loop(root, flags, tools)
    standby = Reconciler(LocalCheckout(root), KubeCluster(load_client(flags[1])), tools,
                         LoopSettings(apply=ApplyOptions(now=T0)), clock=Clock(T0))
    assert not standby.state.leading and standby.state.inventories is None
    server, base = serve(WebUi(page_source(standby, 1)))
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


def sign_in(base: str, token: str, source: str = "127.0.0.1") -> tuple[int, Message]:
    """The sign-in form posted from the address `source` (any of 127/8 reaches loopback)."""
    conn = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=5,
                                      source_address=(source, 0))
    try:
        conn.request("POST", "/ui/login", f"token={token}",
                     {"Content-Type": "application/x-www-form-urlencoded"})
        answer = conn.getresponse()
        answer.read()
        return answer.status, answer.headers
    finally:
        conn.close()


def bearer(base: str, token: str, source: str = "127.0.0.1") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=5,
                                      source_address=(source, 0))
    try:
        conn.request("GET", "/ui/", headers={"Authorization": f"Bearer {token}"})
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def cookie_of(headers: Message) -> str:
    return headers["Set-Cookie"].split(";")[0]


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

        assert sign_in(base, "wrong")[0] == 401
        status, headers = sign_in(base, TOKEN)
        assert status == 303 and headers["Location"] == "/ui/"
        cookie = cookie_of(headers)
        assert cookie.startswith(f"{COOKIE}=") and TOKEN not in cookie
        flags = headers["Set-Cookie"].split("; ")[1:]
        assert {"HttpOnly", "SameSite=Strict", "Path=/ui"} <= set(flags)
        assert "Secure" not in flags  # not asked for (--ui-secure-cookies)
        assert page(base + "/ui/gates", Cookie=cookie)[0] == 200
        assert page(base + "/ui/gates", Cookie=f"{COOKIE}=forged")[0] == 401
        # each sign-in is a session of its own: a new cookie every time
        assert cookie_of(sign_in(base, TOKEN)[1]) != cookie
        # the machine endpoints are not the page's
        assert get(base + "/healthz")[0] == 200 and get(base + "/status")[0] == 200
    finally:
        server.stop()


def test_secure_cookies_when_asked():
    server, base = serve(WebUi(fixed_source(), TOKEN.encode(), secure_cookies=True))
    try:
        assert "Secure" in sign_in(base, TOKEN)[1]["Set-Cookie"].split("; ")
    finally:
        server.stop()


def test_a_cookie_expires():
    now = [1_000_000.0]
    server, base = serve(WebUi(fixed_source(), TOKEN.encode(),
                               sessions=Sessions(max_age=3600, clock=lambda: now[0])))
    try:
        cookie = cookie_of(sign_in(base, TOKEN)[1])
        now[0] += 3599
        assert page(base + "/ui/", Cookie=cookie)[0] == 200
        now[0] += 2
        assert page(base + "/ui/", Cookie=cookie)[0] == 401
    finally:
        server.stop()


def test_wrong_tokens_from_one_address_never_lock_out_the_right_one():
    """Ten wrong tokens a minute from one address: that address's further wrong tokens are
    answered 429; the right token gets in from every address, that one included (form and
    Bearer), and other addresses' wrong tokens are not counted against them."""
    now = [0.0]
    server, base = serve(WebUi(fixed_source(), TOKEN.encode(),
                               throttle=Throttle(per_minute=10, clock=lambda: now[0],
                                                 delay=0)))
    try:
        for guess in range(10):
            assert bearer(base, f"guess-{guess}", "127.0.0.2") == 401
        assert bearer(base, "guess-10", "127.0.0.2") == 429
        status, headers = sign_in(base, "guess-11", "127.0.0.2")
        assert status == 429 and headers["Retry-After"] == "60"
        for source in ("127.0.0.1", "127.0.0.3", "127.0.0.2"):
            assert bearer(base, TOKEN, source) == 200, source
            assert sign_in(base, TOKEN, source)[0] == 303, source
        assert bearer(base, "guess", "127.0.0.3") == 401  # its own count, not the other's
        now[0] = 61.0
        assert bearer(base, "guess-12", "127.0.0.2") == 401  # a new minute
    finally:
        server.stop()


def test_a_rotated_token_file_ends_the_old_token_and_its_cookies(tmp_path):
    """The file is read again when it changes: the new token gets in at once; the old token
    and every cookie issued under it are refused."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    server, base = serve(WebUi(fixed_source(), TokenFile(token_file)))
    try:
        old_cookie = cookie_of(sign_in(base, TOKEN)[1])
        assert page(base + "/ui/", Cookie=old_cookie)[0] == 200
        rotated = tmp_path / "token.new"
        rotated.write_text("the-new-t0ken\n")
        rotated.replace(token_file)  # as a Secret volume swaps its files
        assert page(base + "/ui/", Cookie=old_cookie)[0] == 401
        assert bearer(base, TOKEN) == 401 and sign_in(base, TOKEN)[0] == 401
        assert bearer(base, "the-new-t0ken") == 200
        new_cookie = cookie_of(sign_in(base, "the-new-t0ken")[1])
        assert page(base + "/ui/", Cookie=new_cookie)[0] == 200
        token_file.unlink()  # no token: nobody gets in, the page is never left open
        assert page(base + "/ui/", Cookie=new_cookie)[0] == 401
        assert bearer(base, "the-new-t0ken") == 401
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


PAUSED = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata:\n  name: pause-extra\n"
          "  annotations: {gitgate.io/paused-at: '2026-11-24T03:00:00Z'}\n"
          "spec: {bundles: [extra], reason: INC-7 on call}\n")


def test_missing_pages_are_404_a_favicon_and_what_lifts_each_hold(tmp_path, emulator, tools):
    """Issue 61: `/ui/bundles/<unknown>` answered 200 "Not found", `/favicon.ico` 404 on every
    load; gates had no "since", and no command to lift a gate or retry a halt was shown."""
    root, flags = repo_with_everything(tmp_path, emulator)
    write_files(root, {"gates/pause-extra.yaml": PAUSED})
    loop = halted_loop(root, flags, tools)
    server, base = serve(WebUi(page_source(loop, 1), TOKEN.encode()))
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    try:
        for path in ("/ui/bundles/nothing", "/ui/no-such-page"):
            status, body, _ = page(base + path, **bearer)
            assert status == 404, path
            assert "<h1>Not found</h1>" in body
        status, icon, headers = page(base + "/favicon.ico")  # no token: an asset
        assert status == 200 and headers["Content-Type"] == "image/svg+xml"
        assert icon.startswith("<svg") and "href" not in icon  # nothing fetched from elsewhere
        overview = page(base + "/ui/", **bearer)[1]
        assert '<link rel="icon" href="/favicon.ico"' in overview

        gates = page(base + "/ui/gates", **bearer)[1]
        paused = re.search(r'<tr data-gate="pause-extra">.*?</tr>', gates, re.S).group(0)
        assert '<td class="since"><time datetime="2026-11-24T03:00:00Z"' in paused
        assert "<code class=\"cmd\">gitgate resume pause-extra --push</code>" in paused
        freeze = re.search(r'<tr data-gate="freeze">.*?</tr>', gates, re.S).group(0)
        assert "gitgate resume freeze --push" in freeze

        rollouts = page(base + "/ui/rollouts", **bearer)[1]
        halted = re.search(r'<p class="alert halted".*?</p>', rollouts, re.S).group(0)
        assert "gitgate resume web --kubeconfig KARMADA_KUBECONFIG" in halted
        extra = page(base + "/ui/bundles/extra", **bearer)[1]
        reasons = extra.split("<h2>Reasons</h2>")[1].split("<h2>")[0]
        assert "To lift: <code class=\"cmd\">gitgate resume freeze --push</code>" in reasons
        assert "gitgate resume pause-extra --push" in reasons
        web = page(base + "/ui/bundles/web", **bearer)[1]
        assert "gitgate resume web --kubeconfig KARMADA_KUBECONFIG" in web
    finally:
        server.stop()
