"""The web page in a real browser (issue 30, item 2): Debian's Chromium, headless, driven by
Playwright (its Python package, with the system browser: nothing is downloaded), against a
real `gitgate run` process following a Git repo on the API emulator.

Skipped, saying why, where Chromium is absent: `make setup` installs Debian's `chromium` when
it runs as root with apt (tools/install_chromium.py). With GITGATE_SCREENSHOTS=<folder> the
test also saves the screenshots the docs show (docs/ui-*.png)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from tests.conftest import REPO_ROOT, set_identity, write_files
from tests.support.http import free_port, get, until
from tests.support.webrepo import NS, web_repo

pytestmark = pytest.mark.integration
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
INTERVAL = 5  # seconds between fetches of the loop under test
ROLLOUT = ("rollout: {waves: [{clusters: [member1]}, {clusters: [member2]}], bake: 1s, "
           "progressDeadline: 3s}\n")
CANARY = "c4n4ry-n0-br0wser-sh0uld-see"
TOKEN = "br0wser-t0ken"
# flags that keep Chromium off this machine's closed network and out of a root sandbox
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed: `make setup` installs Debian's chromium when "
                    "it runs as root with apt-get; or `apt-get install chromium`")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is a dev dependency: `make setup`")
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Repo:
    """The repo `gitgate run` follows: a bare upstream, pushed to from a working folder."""

    def __init__(self, root: Path, bare: Path):
        self.root = root
        self.work = git.Repo.init(root, initial_branch="main")
        set_identity(self.work, "On Call", "oncall@example.com")
        git.Repo.init(bare, bare=True, initial_branch="main")
        self.work.create_remote("origin", str(bare))
        self.url = f"file://{bare}"
        self.commit({}, "initial")

    def commit(self, files: dict[str, str], message: str) -> None:
        write_files(self.root, files)
        self.work.git.add("-A")
        self.work.git.commit("-m", message)
        self.work.git.push("origin", "main")


def gate(name: str, bundle: str, reason: str, owner: str) -> dict[str, str]:
    return {f"gates/{name}.yaml": f"apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: "
                                  f"{{name: {name}}}\nspec: {{bundles: [{bundle}], reason: "
                                  f"{reason}, owner: {owner}}}\n"}


@pytest.fixture
def loop(tmp_path, emulator):
    """`gitgate run` with a token on the page: ns, web (a rollout whose first member never
    gets healthy, and a Secret holding the canary), `other`, and `extra` held by a gate."""
    root, flags = web_repo(tmp_path, emulator, ROLLOUT)
    write_files(root, {
        "web/secret.yaml": f"apiVersion: v1\nkind: Secret\nmetadata: {{name: web-db, "
                           f"namespace: {NS}}}\nstringData: {{password: {CANARY}}}\n",
        **{f"{name}/bundle.yaml": f"name: {name}\ndependsOn: [ns]\n" for name in
           ("other", "extra")},
        **{f"{name}/cm.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, "
                              f"namespace: {NS}}}\ndata: {{k: v}}\n" for name in
           ("other", "extra")},
        **gate("freeze", "extra", "INC-42 db migration", "team-payments")})
    repo = Repo(root, tmp_path / "upstream.git")
    (tmp_path / "token").write_text(TOKEN + "\n")
    port = free_port()
    log = tmp_path / "run.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "gitgate.cli", "run", "--repo", repo.url, *flags,
         "--listen", f"127.0.0.1:{port}", "--interval", f"{INTERVAL}s",
         "--status-interval", "1s", "--no-leader-elect", "--ui-refresh", "1s",
         "--ui-token-file", str(tmp_path / "token"), "--cache-dir", str(tmp_path / "cache")],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=log.open("w"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        until(lambda: get(base + "/readyz")[0] == 200, 60, "gitgate run ready")
        yield base, repo
    finally:
        process.terminate()
        process.wait(15)
    assert "Traceback" not in log.read_text()


def shot(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    folder = os.environ.get("GITGATE_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_on_call_sees_verdicts_a_new_hold_a_halted_rollout_and_no_secret(chromium, loop,
                                                                         tmp_path):
    from playwright.sync_api import expect

    base, repo = loop
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    # the token guards the page: its sign-in form, then the overview
    page.goto(base + "/ui/")
    expect(page.locator("h1")).to_have_text("Sign in")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Overview")
    errors.clear()  # the sign-in page's 401 is logged by Chromium as a failed load

    def verdict(bundle: str):
        return page.locator(f'tr[data-bundle="{bundle}"] [data-verdict]')

    for bundle, expected in (("ns", "apply"), ("other", "apply"), ("extra", "held"),
                             ("web", "halted")):
        expect(verdict(bundle)).to_have_attribute("data-verdict", expected, timeout=30_000)
    expect(page.locator('tr[data-bundle="web"] td[data-cluster="member1"]')).to_be_visible()

    # a hold committed to the repo shows within two intervals, without a reload
    page.evaluate("window.__notReloaded = true")
    repo.commit(gate("hold-other", "other", "INC-43 freeze", "oncall"), "hold other")
    committed = time.monotonic()
    expect(verdict("other")).to_have_attribute("data-verdict", "held",
                                               timeout=2 * INTERVAL * 1000)
    assert time.monotonic() - committed < 2 * INTERVAL
    assert page.evaluate("window.__notReloaded") is True
    expect(page.locator("#live")).to_contain_text("live")
    shot(page, tmp_path, "ui-overview")
    seen = [page.content()]

    # the gates, with their owner and what they cover now
    page.click("nav >> text=Gates")
    expect(page.locator('tr[data-gate="hold-other"]')).to_contain_text("oncall")
    expect(page.locator('tr[data-gate="freeze"]')).to_contain_text("team-payments")
    seen.append(page.content())

    # the halted rollout says why
    page.click("nav >> text=Rollouts")
    halted = page.locator('section[data-rollout="web"] .alert.halted')
    expect(halted).to_contain_text("progressDeadline 3s")
    expect(page.locator('section[data-rollout="web"] tr[data-wave="1"]')).to_contain_text(
        "halted")
    seen.append(page.content())

    # the bundle's page: its objects (a Secret by name only), clusters, events
    page.click("nav >> text=Overview")
    page.click('tr[data-bundle="web"] a')
    expect(page.locator("h1")).to_have_text("web")
    expect(page.locator("ul.objects")).to_contain_text("Secret shop/web-db")
    expect(page.locator("main")).to_contain_text("RolloutHalted")
    shot(page, tmp_path, "ui-bundle")
    seen.append(page.content())

    # on a phone, nothing spills sideways: wide tables scroll inside their box
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/ui/bundles/web", "/ui/gates", "/ui/"):
        page.goto(base + path)
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, (path, overflow)
        seen.append(page.content())
    shot(page, tmp_path, "ui-phone")

    assert all(CANARY not in html for html in seen)
    assert errors == []
    context.close()


def test_no_console_error_a_favicon_and_a_404_for_what_does_not_exist(chromium, loop):
    """Issue 61: every load logged a console error for `/favicon.ico` (404), and an unknown
    bundle's page answered 200. Here nothing is cleared: every page loads without a console
    error, the tab's icon is gitgate's own (served inline, fetched from nowhere else), and an
    unknown bundle is a 404 whose page says so."""
    from playwright.sync_api import expect

    base, _ = loop
    context = chromium.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
    page = context.new_page()
    errors: list[str] = []
    icons: list[tuple[str, int]] = []
    elsewhere: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: icons.append((r.url, r.status))
            if "favicon" in r.url else None)
    page.on("request", lambda r: elsewhere.append(r.url)
            if not r.url.startswith(base) else None)
    for path in ("/ui/", "/ui/gates", "/ui/rollouts", "/ui/bundles/web"):
        page.goto(base + path)
        expect(page.locator("#live")).to_contain_text("live")
    icon = page.evaluate("fetch('/favicon.ico').then(r => r.status + ' ' + "
                         "r.headers.get('content-type'))")
    assert icon == "200 image/svg+xml"
    assert page.locator('link[rel="icon"]').get_attribute("href") == "/favicon.ico"
    assert all(status == 200 for _, status in icons), icons
    assert errors == [] and elsewhere == []

    missing = page.goto(base + "/ui/bundles/no-such-bundle")
    assert missing is not None and missing.status == 404
    expect(page.locator("h1")).to_have_text("Not found")
    context.close()
