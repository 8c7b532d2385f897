"""The web page's style sheet and its one small script, served by gitgate itself (the pod has
no internet: nothing is fetched from a CDN, and no front-end framework is needed for a page
that only reads). The script refreshes the page's content every few seconds without a
reload; without JavaScript the page works and is simply reloaded by hand."""

# the tab's icon: a gate, drawn inline (no file, no fetch from elsewhere); served at
# /favicon.ico, where browsers look for one
ICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#101820"/>'
        '<path d="M3 13V4M13 13V4M3 6h10M3 9.5h10" stroke="#7fb0ff" stroke-width="1.6"/>'
        '</svg>')

STYLE = """
:root { --fg: #1d232b; --muted: #5b6673; --line: #d8dee6; --bg: #fff; --head: #f3f5f8;
  --ok: #17794a; --warn: #9a5b00; --bad: #b42318; --info: #2457c5; --pause: #6b4fbb; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: center;
  padding: .6rem 1rem; background: #101820; color: #fff; }
header nav { display: flex; gap: .8rem; flex-wrap: wrap; }
header a { color: #cfe0ff; text-decoration: none; padding: .15rem 0; }
header a[aria-current] { color: #fff; border-bottom: 2px solid #7fb0ff; }
.live { margin-left: auto; font-size: .85rem; color: #9fb3c8; }
.live.down { color: #ffb4a8; }
main { padding: .8rem 1rem 2rem; max-width: 1400px; }
h1 { font-size: 1.35rem; margin: .3rem 0 .8rem; word-break: break-all; }
h2 { font-size: 1.1rem; margin: 1.4rem 0 .5rem; }
footer { padding: .6rem 1rem; color: var(--muted); font-size: .85rem;
  border-top: 1px solid var(--line); }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem;
  border-bottom: 1px solid var(--line); }
thead th { background: var(--head); white-space: nowrap; }
tbody th { white-space: nowrap; }
td.msg { max-width: 36rem; overflow-wrap: anywhere; color: var(--muted); }
code { font-size: .88em; overflow-wrap: anywhere; }
code.cmd { user-select: all; background: var(--head); padding: 0 .3rem; }
.lift { color: var(--muted); }
.badge { display: inline-block; padding: 0 .45rem; border-radius: .7rem; font-size: .82rem;
  font-weight: 600; border: 1px solid currentColor; white-space: nowrap; }
.v-apply { color: var(--ok); } .v-held { color: var(--warn); } .v-suspended { color: var(--pause); }
.v-halted { color: var(--bad); } .v-failed { color: var(--bad); }
.c-ready { color: var(--ok); } .c-suspended { color: var(--pause); }
.c-failed { color: var(--bad); font-weight: 600; } .c-progressing { color: var(--info); }
.c-none { color: var(--line); }
td[data-cluster] { white-space: nowrap; }
.chips { display: flex; flex-wrap: wrap; gap: .4rem; margin-bottom: .6rem; }
.chip { padding: .1rem .6rem; border: 1px solid currentColor; border-radius: 1rem;
  text-decoration: none; font-weight: 600; }
.filters { display: flex; flex-wrap: wrap; gap: .5rem .9rem; align-items: end;
  margin: .4rem 0; }
.filters label { display: flex; flex-direction: column; font-size: .82rem; color: var(--muted); }
.filters input, .filters select, .filters button, .login input, .login button {
  font: inherit; padding: .3rem .45rem; min-height: 2.2rem; }
.alert { border-left: 4px solid var(--bad); background: #fdf0ee; padding: .5rem .7rem;
  margin: .5rem 0; overflow-wrap: anywhere; }
.note { border-left: 4px solid var(--info); background: #eef3fd; padding: .5rem .7rem; }
.empty { color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
ul.reasons, ul.changes, ul.objects { padding-left: 1.2rem; margin: .3rem 0; }
ul.objects { columns: 2 22rem; }
tr.w-released td { color: var(--ok); } tr.w-halted td { color: var(--bad); font-weight: 600; }
tr.w-current td { color: var(--info); } tr.w-pending td { color: var(--muted); }
section { margin-bottom: 1rem; }
.login { display: flex; flex-direction: column; gap: .6rem; max-width: 24rem; }
@media (max-width: 640px) {
  body { font-size: 14px; } main { padding: .6rem .6rem 1.5rem; }
  th, td { padding: .3rem .35rem; } td.msg { min-width: 12rem; }
  dl.facts { grid-template-columns: 1fr; } dl.facts dt { margin-top: .4rem; }
}
"""

SCRIPT = """
(function () {
  "use strict";
  var every = Math.max(1, parseInt(document.body.getAttribute("data-refresh") || "5", 10));
  var live = document.getElementById("live");
  var busy = false, unreadable = false;
  function say(text, down) {
    if (live) { live.textContent = text; live.className = down ? "live down" : "live"; }
  }
  function editing() {
    var el = document.activeElement;
    return el && el.closest && el.closest("form") !== null;
  }
  function refresh() {
    if (busy || document.hidden || editing()) { return; }
    busy = true;
    fetch(window.location.href, {credentials: "same-origin", cache: "no-store"})
      .then(function (answer) {
        // 503: gitgate answers but cannot read its records; its page says why. 404: a
        // bundle not recorded (yet): its page says so, and shows it once it is
        if (!answer.ok && answer.status !== 503 && answer.status !== 404) {
          throw new Error("HTTP " + answer.status);
        }
        unreadable = answer.status === 503;
        return answer.text();
      })
      .then(function (text) {
        var page = new DOMParser().parseFromString(text, "text/html");
        ["main", "footer"].forEach(function (id) {
          var fresh = page.getElementById(id), here = document.getElementById(id);
          if (fresh && here && fresh.innerHTML !== here.innerHTML) {
            here.innerHTML = fresh.innerHTML;
          }
        });
        say(unreadable ? "records unreadable" : "live · every " + every + "s", unreadable);
      })
      .catch(function (error) { say("not updating: " + error.message, true); })
      .then(function () { busy = false; });
  }
  say("live · every " + every + "s", false);
  window.setInterval(refresh, every * 1000);
})();
"""
