"""The read-only web page's HTML, rendered on the server: the overview (bundles × member
clusters), gates, rollouts and one page per bundle. Pure: a `Snapshot` in, a page out. Every
value that reaches the page is escaped here; what gitgate records never holds a Secret's
value, and the last changes name a Secret's `.data`, never its keys."""

from __future__ import annotations

import fnmatch
import html
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from gitgate.apply.inventory import Inventory
from gitgate.apply.standing import standing_of
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.karmada.waves import RolloutState
from gitgate.model import ReasonKind, Verdict
from gitgate.output.recordviews import clusters_ready
from gitgate.output.statusviews import namespaces_everywhere, revision_cell
from gitgate.output.tables import parse_stamp
from gitgate.timespec import age, duration_text, rfc3339

ICON_LINK = '<link rel="icon" href="/favicon.ico" type="image/svg+xml">'
VERDICTS = (Verdict.APPLY, Verdict.HELD, Verdict.SUSPENDED, Verdict.HALTED, Verdict.FAILED)


@dataclass(frozen=True)
class Snapshot:
    """What one page shows, read at one moment."""

    now: datetime
    inventories: tuple[Inventory, ...]
    dispatch: Mapping[str, Dispatch]
    overview: Mapping[str, Any]  # status.overview's document ({} when none is known)
    origin: str  # where the state comes from: the repo the loop follows, or the API server
    revision: str | None = None  # the loop's last reconciled revision (None: not known here)
    problems: tuple[str, ...] = ()  # the loop's last error, an unreadable Karmada, provenance
    refresh_seconds: int = 5
    verdicts: Mapping[str, str] = field(default_factory=dict)  # a failed pass's bundles

    def verdict(self, inv: Inventory) -> str:
        return self.verdicts.get(inv.bundle) or inv.verdict or "-"


@dataclass(frozen=True)
class Filters:
    """The overview's filters, from its query string."""

    name: str = ""
    label: str = ""
    verdict: str = ""

    @classmethod
    def of(cls, query: Mapping[str, Sequence[str]]) -> Filters:
        def one(key: str) -> str:
            values = query.get(key) or [""]
            return values[0].strip()[:200]
        return cls(one("name"), one("label"), one("verdict"))

    def keep(self, inv: Inventory, verdict: str) -> bool:
        if self.verdict and verdict != self.verdict:
            return False
        if self.name:
            pattern = self.name if any(c in self.name for c in "*?[") else f"*{self.name}*"
            if not fnmatch.fnmatchcase(inv.bundle, pattern):
                return False
        if self.label:
            key, sep, value = self.label.partition("=")
            labels = dict(inv.labels)
            if key.strip() not in labels or (sep and labels[key.strip()] != value.strip()):
                return False
        return True


def e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def bundle_href(name: str) -> str:
    return "/ui/bundles/" + quote(name, safe="/")


def _when(text: str | None, now: datetime) -> str:
    """`3m ago` / `in 5m`, with the time itself on hover."""
    moment = parse_stamp(text) if text else None
    if moment is None:
        return "-"
    ago = age(moment, now)
    shown = ago if ago.startswith("in ") else f"{ago} ago"
    return f'<time datetime="{e(rfc3339(moment))}" title="{e(rfc3339(moment))}">{e(shown)}</time>'


def _badge(verdict: str) -> str:
    return f'<span class="badge v-{e(verdict)}" data-verdict="{e(verdict)}">{e(verdict)}</span>'


def layout(title: str, body: str, snap: Snapshot, active: str) -> str:
    tabs = "".join(
        f'<a href="{href}"{" aria-current=page" if key == active else ""}>{label}</a>'
        for key, href, label in (("overview", "/ui/", "Overview"), ("gates", "/ui/gates", "Gates"),
                                 ("rollouts", "/ui/rollouts", "Rollouts")))
    problems = "".join(f'<p class="alert" role="alert">{e(p)}</p>' for p in snap.problems)
    revision = f"revision {e((snap.revision or '-')[:12])} · " if snap.revision is not None else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{e(title)} · gitgate</title><link rel="stylesheet" href="/ui/app.css">'
        f'{ICON_LINK}<script src="/ui/app.js" defer></script></head>'
        f'<body data-refresh="{snap.refresh_seconds}"><header><strong>gitgate</strong>'
        f'<nav>{tabs}</nav><span id="live" class="live" aria-live="polite"></span></header>'
        f'<main id="main"><h1>{e(title)}</h1>{problems}{body}</main>'
        f'<footer id="footer">{revision}{e(snap.origin)} · read '
        f'<time datetime="{e(rfc3339(snap.now))}">{e(rfc3339(snap.now))}</time></footer>'
        '</body></html>')


# ------------------------------------------------------------------ overview
def cluster_td(state: ClusterState | None, runs: str | None) -> str:
    if state is None:
        return '<td class="c-none">·</td>'
    if state.suspended:
        css, text = "c-suspended", "‖ suspended"
    elif state.ready:
        css, text = "c-ready", "✓ ready"
    elif state.health is Health.UNHEALTHY or state.apply_failed:
        css, text = "c-failed", "✗ " + ("apply failed" if state.apply_failed else "unhealthy")
    else:
        css, text = "c-progressing", "… " + state.summary()
    if state.version is Version.BEHIND:
        text += " · behind"
    if runs:
        text += f" · @{runs[:7]}"
    title = f' title="{e(state.message)}"' if state.message else ""
    return f'<td class="{css}" data-cluster="{e(state.name)}"{title}>{e(text)}</td>'


def overview_page(snap: Snapshot, filters: Filters) -> str:
    rows = sorted(snap.inventories, key=lambda i: i.bundle)
    counts = {v: sum(1 for i in rows if snap.verdict(i) == v) for v in VERDICTS}
    chips = "".join(
        f'<a class="chip v-{v}" href="/ui/?{urlencode({"verdict": str(v)})}">{v}: {n}</a>'
        for v, n in counts.items() if n)
    options = "".join(f'<option value="{v}"{" selected" if filters.verdict == v else ""}>{v}'
                      "</option>" for v in VERDICTS)
    form = (
        '<form class="filters" method="get" action="/ui/">'
        f'<label>Name <input name="name" value="{e(filters.name)}" placeholder="shop/*"></label>'
        f'<label>Label <input name="label" value="{e(filters.label)}" '
        'placeholder="team=payments"></label>'
        f'<label>Verdict <select name="verdict"><option value="">any</option>{options}'
        '</select></label><button type="submit">Filter</button> <a href="/ui/">clear</a></form>')
    kept = [i for i in rows if filters.keep(i, snap.verdict(i))]
    members = sorted({c.name for i in kept
                      for c in snap.dispatch.get(i.bundle, Dispatch()).clusters})
    head = "".join(f"<th>{e(m)}</th>" for m in members)
    lines = []
    for inv in kept:
        dispatch = snap.dispatch.get(inv.bundle, Dispatch())
        by_name = {c.name: c for c in dispatch.clusters}
        cells = "".join(
            cluster_td(by_name.get(m), _other_revision(inv, m) if m in by_name else None)
            for m in members)
        where = ("all members (Karmada sends Namespaces itself)"
                 if namespaces_everywhere(inv, dispatch) else "")
        message = standing_of(inv).line() or dispatch.message or where
        lines.append(
            f'<tr data-bundle="{e(inv.bundle)}"><th scope="row">'
            f'<a href="{e(bundle_href(inv.bundle))}">{e(inv.bundle)}</a></th>'
            f"<td>{_badge(snap.verdict(inv))}</td><td>{e(clusters_ready(dispatch))}</td>"
            f"<td><code>{e(revision_cell(inv))}</code></td>{cells}"
            f'<td class="msg">{e(message) or "-"}</td></tr>')
    table = (f'<div class="scroll"><table class="bundles"><thead><tr><th>Bundle</th>'
             f"<th>Verdict</th><th>Ready</th><th>Revision</th>{head}<th>Message</th></tr>"
             f'</thead><tbody>{"".join(lines)}</tbody></table></div>') if kept else (
        '<p class="empty">No bundle matches.</p>' if rows else
        '<p class="empty">No bundle recorded yet: the loop has not applied anything.</p>')
    shown = f"<p>{len(kept)} of {len(rows)} bundles</p>"
    return layout("Overview", f'<div class="chips">{chips}</div>{form}{shown}{table}', snap,
                  "overview")


def _other_revision(inv: Inventory, cluster: str) -> str | None:
    runs = inv.cluster_revision(cluster)
    return None if runs == inv.applied_revision else (runs or "none")


# ------------------------------------------------------------------ gates
def gates_of(snap: Snapshot) -> tuple[list[dict[str, Any]], bool]:
    """The loop's gates; without an overview, those the bundles' records name (and False)."""
    gates = snap.overview.get("gates")
    if isinstance(gates, list):
        return [g for g in gates if isinstance(g, dict)], True
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for inv in snap.inventories:
        for r in inv.reasons:
            if r.get("kind") == "rollout":
                continue
            key = (str(r.get("gate")), str(r.get("file")))
            gate = found.setdefault(key, {
                "name": r.get("gate"), "file": r.get("file"), "action": r.get("action"),
                "reason": r.get("reason"), "owner": None, "active": True, "covers": [],
                "until": r.get("until"), "nextChange": None, "windows": [],
                "clusters": r.get("clusters") or []})
            gate["covers"].append(inv.bundle)
    return list(found.values()), False


def gates_page(snap: Snapshot) -> str:
    gates, complete = gates_of(snap)
    active = [g for g in gates if g.get("active")]
    upcoming = [g for g in gates if not g.get("active") and g.get("nextChange")]
    idle = [g for g in gates if not g.get("active") and not g.get("nextChange")]
    parts = []
    for bad in snap.overview.get("invalidGates") or []:
        where = f"{bad.get('file')}:{bad.get('line')}" if bad.get("line") else bad.get("file")
        scope = (f"every bundle under {', '.join(bad.get('within') or [])}"
                 if bad.get("within") else "every bundle")
        parts.append(f'<p class="alert invalid-gate" role="alert"><code>{e(where)}</code>: '
                     f"{e(bad.get('message'))}. It holds {e(scope)} until fixed.</p>")
    if not complete:
        parts.append('<p class="note">The loop has recorded no overview yet: these are the '
                     "gates the bundles' records name (upcoming windows are not known).</p>")
    parts.append(_gate_table("Active", active, snap.now, "in force"))
    parts.append(_gate_table("Upcoming", upcoming, snap.now, "starts"))
    if idle:
        parts.append(_gate_table("Not holding", idle, snap.now, ""))
    return layout("Gates", "".join(parts), snap, "gates")


def _gate_table(title: str, gates: list[dict[str, Any]], now: datetime, when: str) -> str:
    if not gates:
        return f"<h2>{e(title)}</h2><p class=\"empty\">None.</p>"
    rows = []
    for g in sorted(gates, key=lambda g: str(g.get("name"))):
        if when == "in force":
            timing = (f"until {_when(g.get('until'), now)}" if g.get("until") else
                      f"window ends {_when(g.get('nextChange'), now)}" if g.get("nextChange")
                      else "until the file is removed")
        elif when == "starts":
            timing = f"starts {_when(g.get('nextChange'), now)}"
        else:
            timing = f"ended {_when(g.get('until'), now)}" if g.get("until") else "-"
        windows = "".join(f"<div><code>{e(w)}</code></div>" for w in g.get("windows") or [])
        covers = [str(c) for c in g.get("covers") or []]
        more = int(g.get("coversMore") or 0)
        covered = ", ".join(f'<a href="{e(bundle_href(c))}">{e(c)}</a>' for c in covers) + (
            f" and {more} more" if more else "") or "nothing now"
        clusters = (f" on {e(', '.join(g.get('clusters') or []))}" if g.get("clusters")
                    else "")
        since = _when(g.get("since"), now) if g.get("since") else "-"
        lift = (f'<code class="cmd">{e(lift_gate(str(g.get("name"))))}</code>'
                if when != "starts" else "-")
        rows.append(
            f'<tr data-gate="{e(g.get("name"))}"><th scope="row">{e(g.get("name"))}</th>'
            f"<td>{e(g.get('action'))}{clusters}</td><td>{e(g.get('reason'))}</td>"
            f"<td>{e(g.get('owner') or '-')}</td><td class=\"since\">{since}</td>"
            f"<td>{timing}{windows}</td><td>{covered}</td>"
            f"<td><code>{e(g.get('file'))}</code></td><td>{lift}</td></tr>")
    return (f"<h2>{e(title)}</h2><div class=\"scroll\"><table><thead><tr><th>Gate</th>"
            "<th>Action</th><th>Reason</th><th>Owner</th><th>Since</th><th>When</th>"
            "<th>Covers now</th><th>File</th><th>To lift</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


# ------------------------------------------------------------------ rollouts
def _rollout(snap: Snapshot, inv: Inventory) -> str:
    """A bundle's waves: released, the current one with its bake or deadline, the rest."""
    spec = (snap.overview.get("rollouts") or {}).get(inv.bundle) or {}
    state = RolloutState.from_json(inv.progression.rollout)
    waves: list[str] = list(spec.get("waves") or [])
    if state is None and not waves:
        return ""
    bake = timedelta(seconds=int(spec.get("bakeSeconds") or 0))
    deadline = timedelta(seconds=int(spec.get("deadlineSeconds") or 0))
    rows = []
    for index, wave in enumerate(waves or [f"wave {state.wave + 1}" if state else "-"]):
        at = state.wave if state is not None else -1
        if state is None or index > at:
            css, text = "w-pending", "not released"
        elif index < at:
            css, text = "w-released", "released ✓"
        elif state.halted:
            css, text = "w-halted", f"halted: {state.halted}"
        elif state.healthy_since is not None and bake:
            css, text = "w-current", (f"baking, healthy since {age(state.healthy_since, snap.now)}"
                                      f"; next wave {age(state.healthy_since + bake, snap.now)}")
        else:
            left = age(state.started + deadline, snap.now) if deadline else "-"
            css, text = "w-current", (f"released {age(state.started, snap.now)} ago, waiting "
                                      f"for ready; deadline {left}")
        rows.append(f'<tr class="{css}" data-wave="{index + 1}"><td>{index + 1}</td>'
                    f"<td>{e(wave)}</td><td>{e(text)}</td></tr>")
    done = state is not None and waves and state.wave >= len(waves)
    head = (f"<p>{'Complete.' if done else e(spec.get('waitingFor') or '')} "
            f"Bake {e(duration_text(bake))}, deadline {e(duration_text(deadline))}, on failure "
            f"{e(spec.get('onFailure') or 'hold')}.</p>" if spec else "")
    halted = (f'<p class="alert halted" role="alert">Halted: {e(state.halted)}. To retry the '
              f'wave: <code class="cmd">{e(retry_halt(inv.bundle))}</code></p>'
              if state is not None and state.halted else "")
    return (f"{halted}{head}<div class=\"scroll\"><table class=\"waves\"><thead><tr><th>#</th>"
            f"<th>Clusters</th><th>State</th></tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table></div>")


def rollouts_page(snap: Snapshot) -> str:
    parts = []
    for inv in sorted(snap.inventories, key=lambda i: i.bundle):
        shown = _rollout(snap, inv)
        if shown:
            parts.append(f'<section data-rollout="{e(inv.bundle)}"><h2>'
                         f'<a href="{e(bundle_href(inv.bundle))}">{e(inv.bundle)}</a> '
                         f"{_badge(snap.verdict(inv))}</h2>{shown}</section>")
    if (snap.overview.get("rolloutsLeftOut")):
        parts.append('<p class="note">Too many rollouts to record: their waves are left out; '
                     "each bundle's page shows its progress.</p>")
    return layout("Rollouts", "".join(parts) or '<p class="empty">No bundle has a rollout.</p>',
                  snap, "rollouts")


# ------------------------------------------------------------------ one bundle
def bundle_page(snap: Snapshot, inv: Inventory, events: list[dict[str, Any]]) -> str:
    dispatch = snap.dispatch.get(inv.bundle, Dispatch())
    meaning = standing_of(inv)
    facts = [("Verdict", _badge(snap.verdict(inv))), ("Source", e(inv.source or "-")),
             ("Live revision", f"<code>{e(revision_cell(inv))}</code>"),
             ("Attempted", f"<code>{e(inv.revision[:12] or '-')}</code>"),
             ("Since", _when(inv.since, snap.now)),
             ("Last applied", _when(inv.last_applied, snap.now)),
             ("Labels", e(", ".join(f"{k}={v}" for k, v in inv.labels) or "-")),
             ("Message", e(meaning.message or dispatch.message or "-")),
             ("Next", "<br>".join(f"<code>{e(c)}</code>" for c in meaning.commands) or "-")]
    parts = ['<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
             + "</dl>"]
    reasons = "".join(
        f"<li><code>{e(r.get('file'))}{':' + e(r['line']) if r.get('line') else ''}</code> "
        f"{e(r.get('kind'))} <strong>{e(r.get('gate'))}</strong>: {e(r.get('reason'))}"
        + (f" (until {_when(str(r['until']), snap.now)})" if r.get("until") else "")
        + _lifted_by(r, inv.bundle) + "</li>"
        for r in inv.reasons)
    in_force = "".join(f'<li data-gate="{e(g.gate)}">{e(g.said())}</li>' for g in meaning.gates)
    parts.append("<h2>Gates in force</h2>" + (f'<ul class="gates-in-force">{in_force}</ul>'
                                              if in_force else "<p>None.</p>"))
    parts.append("<h2>Reasons</h2>" + (f'<ul class="reasons">{reasons}</ul>'
                                       if reasons else "<p>None holds it.</p>"))
    clusters = "".join(
        f'<tr data-cluster="{e(c.name)}"><th scope="row">{e(c.name)}</th>'
        f"{cluster_td(c, _other_revision(inv, c.name))}<td>{_yes(c.scheduled)}</td>"
        f"<td>{_yes(c.applied)}</td><td>{e(c.health)}</td><td>{e(c.version)}</td>"
        f"<td><code>{e(inv.cluster_revision(c.name)[:12] or '-')}</code></td>"
        f'<td class="msg">{e(c.message or "-")}</td></tr>' for c in dispatch.clusters)
    parts.append("<h2>Member clusters</h2>" + (
        '<div class="scroll"><table><thead><tr><th>Cluster</th><th>State</th><th>Scheduled</th>'
        "<th>Applied</th><th>Health</th><th>Version</th><th>Revision</th><th>Message</th></tr>"
        f"</thead><tbody>{clusters}</tbody></table></div>" if clusters
        else "<p>Karmada reports no member cluster for it.</p>"))
    rollout = _rollout(snap, inv)
    if rollout:
        parts.append(f"<h2>Rollout</h2>{rollout}")
    parts.append("<h2>Last change</h2>" + _last_change(snap, inv))
    objects = "".join(f"<li><code>{e(entry.ref)}</code></li>" for entry in inv.entries)
    parts.append(f"<h2>Objects ({len(inv.entries)})</h2><ul class=\"objects\">{objects}</ul>")
    history = "".join(
        f"<tr><td><code>{e(h.get('revision', '')[:12])}</code></td>"
        f"<td>{_when(h.get('at'), snap.now)}</td><td>{e(h.get('outcome'))}</td>"
        f"<td>{e(h.get('by'))}</td></tr>" for h in reversed(inv.history))
    parts.append("<h2>History</h2>" + (
        "<table><thead><tr><th>Revision</th><th>When</th><th>Outcome</th><th>By</th></tr>"
        f"</thead><tbody>{history}</tbody></table>" if history else "<p>No apply yet.</p>"))
    shown = "".join(
        f"<tr><td>{e(ev.get('type'))}</td><td>{e(ev.get('reason'))}</td>"
        f"<td>{_when(str(ev.get('at') or ''), snap.now)}</td><td>{e(ev.get('note'))}</td></tr>"
        for ev in reversed(events[-20:]))
    parts.append("<h2>Recent events</h2>" + (
        '<div class="scroll"><table><thead><tr><th>Type</th><th>Reason</th><th>When</th>'
        f"<th>Message</th></tr></thead><tbody>{shown}</tbody></table></div>" if shown
        else "<p>None.</p>"))
    return layout(inv.bundle, "".join(parts), snap, "")


def _last_change(snap: Snapshot, inv: Inventory) -> str:
    change = (snap.overview.get("changes") or {}).get(inv.bundle)
    if not isinstance(change, dict):
        return "<p>No change seen since the loop started (field paths are shown from the " \
               "second content change a loop sees).</p>"
    items = []
    for obj in change.get("objects") or []:
        fields = ", ".join(f"<code>{e(f)}</code>" for f in obj.get("fields") or [])
        more = int(obj.get("fieldsMore") or 0)
        items.append(f"<li>{e(obj.get('action'))} <code>{e(obj.get('object'))}</code>"
                     + (f": {fields}" if fields else "") + (f" and {more} more" if more else "")
                     + "</li>")
    more = int(change.get("objectsMore") or 0)
    return (f"<p>At <code>{e(str(change.get('revision'))[:12])}</code>, "
            f"{_when(change.get('at'), snap.now)} (field paths only, never values):</p>"
            f'<ul class="changes">{"".join(items)}</ul>'
            + (f"<p>and {more} more objects</p>" if more else ""))


def missing_page(snap: Snapshot, name: str, what: str = "bundle") -> str:
    said = (f"No bundle named <code>{e(name)}</code> is recorded." if what == "bundle"
            else f"There is no page <code>{e(name)}</code>.")
    return layout("Not found", f'<p>{said} <a href="/ui/">All bundles</a></p>', snap, "")


# ------------------------------------------------------------------ what lifts a hold
def lift_gate(gate: str) -> str:
    """The command that lifts a gate, run in a checkout of the repo."""
    return f"gitgate resume {shlex.quote(gate)} --push"


def retry_halt(bundle: str) -> str:
    """The command that asks a halted rollout to try its wave again."""
    return f"gitgate resume {shlex.quote(bundle)} --kubeconfig KARMADA_KUBECONFIG"


def _lifted_by(reason: Mapping[str, Any], bundle: str) -> str:
    """What ends one of a bundle's hold reasons, as a command where one exists."""
    kind, file = reason.get("kind"), str(reason.get("file") or "")
    if kind == ReasonKind.GATE and reason.get("gate"):
        said = f'<code class="cmd">{e(lift_gate(str(reason["gate"])))}</code>'
    elif kind == ReasonKind.ROLLOUT:
        said = f'<code class="cmd">{e(retry_halt(bundle))}</code>'
    elif kind == ReasonKind.PAUSE_FILE and file:
        said = f'<code class="cmd">{e("git rm " + shlex.quote(file))}</code>, commit and push'
    elif kind == ReasonKind.INVALID_GATE and file:
        said = f"fix <code>{e(file)}</code> (<code>gitgate check</code> says what is wrong)"
    else:
        return ""
    return f' <span class="lift">To lift: {said}</span>'



def _yes(value: bool) -> str:
    return "yes" if value else "no"


def login_page(said: str = "") -> str:
    """The sign-in form (the page's token, `--ui-token-file`)."""
    alert = f'<p class="alert" role="alert">{e(said)}</p>' if said else ""
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>Sign in · gitgate</title><link rel="stylesheet" href="/ui/app.css">'
            f'{ICON_LINK}</head><body><header><strong>gitgate</strong></header><main>'
            '<h1>Sign in</h1>'
            f'{alert}<p>This page is protected by the token gitgate was started with '
            '(<code>--ui-token-file</code>).</p><form class="login" method="post" '
            'action="/ui/login"><label>Token <input type="password" name="token" '
            'autocomplete="current-password" required></label>'
            '<button type="submit">Sign in</button></form></main></body></html>')
