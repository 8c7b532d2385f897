"""The web page's overview (bundles × member clusters) and one page per bundle, rendered on
the server. Pure: a `Snapshot` in, a page out. What gitgate records never holds a Secret's
value, and the last changes name a Secret's `.data`, never its keys."""

from __future__ import annotations

import shlex
from urllib.parse import urlencode

from gitgate.apply.inventory import Inventory
from gitgate.apply.recordedreason import RecordedReason
from gitgate.karmada.dispatch import ClusterState, Dispatch, Health, Version
from gitgate.model import ReasonKind
from gitgate.output.recordviews import clusters_ready
from gitgate.output.tables import cell
from gitgate.output.weblayout import (
    VERDICTS,
    Filters,
    Snapshot,
    badge,
    bundle_href,
    e,
    layout,
    lift_gate,
    retry_halt,
    time_tag,
)
from gitgate.output.webrollouts import rollout_waves
from gitgate.passes.recorded import BundleEvent
from gitgate.status.bundlestate import BundleState, ClusterRecord
from gitgate.status.overview import change_of


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
        state = BundleState.of(inv, snap.dispatch.get(inv.bundle, Dispatch()))
        by_name = {c.state.name: c for c in state.clusters}
        cells = "".join(cluster_td(by_name[m].state, _runs(by_name[m])) if m in by_name
                        else cluster_td(None, None) for m in members)
        where = "all members (Karmada sends Namespaces itself)" if state.all_members else ""
        message = state.standing.line() or state.dispatch.message or where
        lines.append(
            f'<tr data-bundle="{e(inv.bundle)}"><th scope="row">'
            f'<a href="{e(bundle_href(inv.bundle))}">{e(inv.bundle)}</a></th>'
            f"<td>{badge(snap.verdict(inv))}</td><td>{e(clusters_ready(state.dispatch))}</td>"
            f"<td><code>{e(state.revision_cell)}</code></td>{cells}"
            f'<td class="msg">{e(message) or "-"}</td></tr>')
    table = (f'<div class="scroll"><table class="bundles"><thead><tr><th>Bundle</th>'
             f"<th>Verdict</th><th>Ready</th><th>Revision</th>{head}<th>Message</th></tr>"
             f'</thead><tbody>{"".join(lines)}</tbody></table></div>') if kept else (
        '<p class="empty">No bundle matches.</p>' if rows else
        '<p class="empty">No bundle recorded yet: the loop has not applied anything.</p>')
    shown = f"<p>{len(kept)} of {len(rows)} bundles</p>"
    return layout("Overview", f'<div class="chips">{chips}</div>{form}{shown}{table}', snap,
                  "overview")


def _runs(cluster: ClusterRecord) -> str | None:
    """The revision a member runs when it is not the bundle's live one (`none`: no revision)."""
    runs = cluster.runs_other
    return None if runs is None else runs or "none"


def bundle_page(snap: Snapshot, inv: Inventory, events: list[BundleEvent]) -> str:
    state = BundleState.of(inv, snap.dispatch.get(inv.bundle, Dispatch()))
    meaning = state.standing
    facts = [("Verdict", badge(snap.verdict(inv))), ("Source", e(inv.source or "-")),
             ("Live revision", f"<code>{e(state.revision_cell)}</code>"),
             ("Attempted", f"<code>{e(inv.revision[:12] or '-')}</code>"),
             ("Since", time_tag(inv.since, snap.now)),
             ("Last applied", time_tag(inv.last_applied, snap.now)),
             ("Labels", e(", ".join(f"{k}={v}" for k, v in inv.labels) or "-")),
             ("Message", e(meaning.message or state.dispatch.message or "-")),
             ("Next", "<br>".join(f"<code>{e(c)}</code>" for c in meaning.commands) or "-")]
    parts = ['<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
             + "</dl>"]
    reasons = "".join(
        f"<li><code>{e(r.where())}</code> "
        f"{e(r.kind)} <strong>{e(r.gate)}</strong>: {e(r.reason)}"
        + (f" (until {time_tag(r.until, snap.now)})" if r.until else "")
        + _lifted_by(r, inv.bundle) + "</li>"
        for r in meaning.reasons)
    in_force = "".join(f'<li data-gate="{e(g.gate)}">{e(g.said())}</li>' for g in meaning.gates)
    parts.append("<h2>Gates in force</h2>" + (f'<ul class="gates-in-force">{in_force}</ul>'
                                              if in_force else "<p>None.</p>"))
    parts.append("<h2>Reasons</h2>" + (f'<ul class="reasons">{reasons}</ul>'
                                       if reasons else "<p>None holds it.</p>"))
    clusters = "".join(
        f'<tr data-cluster="{e(c.name)}"><th scope="row">{e(c.name)}</th>'
        f"{cluster_td(c, _runs(r))}"
        + "".join(f"<td>{e(cell(v))}</td>" for _, v in c.columns())
        + f"<td><code>{e(r.revision[:12] or '-')}</code></td>"
        f'<td class="msg">{e(c.message or "-")}</td></tr>'
        for c, r in ((r.state, r) for r in state.clusters))
    signals = "".join(f"<th>{e(name.capitalize())}</th>" for name in ClusterState.headings())
    parts.append("<h2>Member clusters</h2>" + (
        '<div class="scroll"><table><thead><tr><th>Cluster</th><th>State</th>'
        f"{signals}<th>Revision</th><th>Message</th></tr>"
        f"</thead><tbody>{clusters}</tbody></table></div>" if clusters
        else "<p>Karmada reports no member cluster for it.</p>"))
    rollout = rollout_waves(snap, inv)
    if rollout:
        parts.append(f"<h2>Rollout</h2>{rollout}")
    parts.append("<h2>Last change</h2>" + _last_change(snap, inv))
    objects = "".join(f"<li><code>{e(entry.ref)}</code></li>" for entry in inv.entries)
    parts.append(f"<h2>Objects ({len(inv.entries)})</h2><ul class=\"objects\">{objects}</ul>")
    history = "".join(
        f"<tr><td><code>{e(h.get('revision', '')[:12])}</code></td>"
        f"<td>{time_tag(h.get('at'), snap.now)}</td><td>{e(h.get('outcome'))}</td>"
        f"<td>{e(h.get('by'))}</td></tr>" for h in reversed(inv.history))
    parts.append("<h2>History</h2>" + (
        "<table><thead><tr><th>Revision</th><th>When</th><th>Outcome</th><th>By</th></tr>"
        f"</thead><tbody>{history}</tbody></table>" if history else "<p>No apply yet.</p>"))
    shown = "".join(
        f"<tr><td>{e(ev.get('type'))}</td><td>{e(ev.get('reason'))}</td>"
        f"<td>{time_tag(str(ev.get('at') or ''), snap.now)}</td><td>{e(ev.get('note'))}</td></tr>"
        for ev in reversed(events[-20:]))
    parts.append("<h2>Recent events</h2>" + (
        '<div class="scroll"><table><thead><tr><th>Type</th><th>Reason</th><th>When</th>'
        f"<th>Message</th></tr></thead><tbody>{shown}</tbody></table></div>" if shown
        else "<p>None.</p>"))
    return layout(inv.bundle, "".join(parts), snap, "")


def _last_change(snap: Snapshot, inv: Inventory) -> str:
    change = change_of(snap.overview, inv.bundle)
    if change is None:
        return "<p>No change seen since the loop started (field paths are shown from the " \
               "second content change a loop sees).</p>"
    items = []
    for obj in change.objects:
        fields = ", ".join(f"<code>{e(f)}</code>" for f in obj.fields)
        more = obj.fields_more
        items.append(f"<li>{e(obj.action)} <code>{e(obj.object)}</code>"
                     + (f": {fields}" if fields else "") + (f" and {more} more" if more else "")
                     + "</li>")
    more = change.objects_more
    return (f"<p>At <code>{e(change.revision[:12])}</code>, "
            f"{time_tag(change.at, snap.now)} (field paths only, never values):</p>"
            f'<ul class="changes">{"".join(items)}</ul>'
            + (f"<p>and {more} more objects</p>" if more else ""))


def _lifted_by(reason: RecordedReason, bundle: str) -> str:
    """What ends one of a bundle's hold reasons, as a command where one exists."""
    kind, file = reason.kind, reason.file
    if kind == ReasonKind.GATE and reason.gate:
        said = f'<code class="cmd">{e(lift_gate(reason.gate))}</code>'
    elif kind == ReasonKind.ROLLOUT:
        said = f'<code class="cmd">{e(retry_halt(bundle))}</code>'
    elif kind == ReasonKind.PAUSE_FILE and file:
        said = f'<code class="cmd">{e("git rm " + shlex.quote(file))}</code>, commit and push'
    elif kind == ReasonKind.INVALID_GATE and file:
        said = f"fix <code>{e(file)}</code> (<code>gitgate check</code> says what is wrong)"
    else:
        return ""
    return f' <span class="lift">To lift: {said}</span>'
