"""The web page's gates: active, upcoming and not holding, with whom to ask, what each
covers now and the command that lifts it. Pure: a `Snapshot` in, a page out."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from gitgate.apply.standing import reasons_of
from gitgate.model import ReasonKind
from gitgate.output.weblayout import Snapshot, bundle_href, e, layout, lift_gate, time_tag
from gitgate.status.gaterecord import GateRecord, InvalidGateRecord, recorded_gates


def gates_of(snap: Snapshot) -> tuple[list[GateRecord], list[InvalidGateRecord], bool]:
    """The loop's gates and invalid gate files; without an overview, the gates the bundles'
    records name (and False)."""
    recorded = recorded_gates(snap.overview)
    if recorded is not None:
        return *recorded, True
    found: dict[tuple[str, str], GateRecord] = {}
    for inv in snap.inventories:
        for r in reasons_of(inv):
            if r.kind == ReasonKind.ROLLOUT:
                continue
            gate = found.get((r.gate, r.file)) or GateRecord(
                r.gate, r.file, r.action, r.reason, until=r.until, clusters=r.clusters)
            found[(r.gate, r.file)] = replace(gate, covers=(*gate.covers, inv.bundle))
    return list(found.values()), [], False


def gates_page(snap: Snapshot) -> str:
    gates, invalid, complete = gates_of(snap)
    active = [g for g in gates if g.active]
    upcoming = [g for g in gates if not g.active and g.next_change]
    idle = [g for g in gates if not g.active and not g.next_change]
    parts = []
    for bad in invalid:
        scope = f"every bundle under {', '.join(bad.within)}" if bad.within else "every bundle"
        parts.append(f'<p class="alert invalid-gate" role="alert"><code>{e(bad.where())}</code>: '
                     f"{e(bad.message)}. It holds {e(scope)} until fixed.</p>")
    if not complete:
        parts.append('<p class="note">The loop has recorded no overview yet: these are the '
                     "gates the bundles' records name (upcoming windows are not known).</p>")
    parts.append(_gate_table("Active", active, snap.now, "in force"))
    parts.append(_gate_table("Upcoming", upcoming, snap.now, "starts"))
    if idle:
        parts.append(_gate_table("Not holding", idle, snap.now, ""))
    return layout("Gates", "".join(parts), snap, "gates")


def _gate_table(title: str, gates: list[GateRecord], now: datetime, when: str) -> str:
    if not gates:
        return f"<h2>{e(title)}</h2><p class=\"empty\">None.</p>"
    rows = []
    for g in sorted(gates, key=lambda g: g.name):
        if when == "in force":
            timing = (f"until {time_tag(g.until, now)}" if g.until else
                      f"window ends {time_tag(g.next_change, now)}" if g.next_change
                      else "until the file is removed")
        elif when == "starts":
            timing = f"starts {time_tag(g.next_change, now)}"
        else:
            timing = f"ended {time_tag(g.until, now)}" if g.until else "-"
        windows = "".join(f"<div><code>{e(w)}</code></div>" for w in g.windows)
        covered = ", ".join(f'<a href="{e(bundle_href(c))}">{e(c)}</a>' for c in g.covers) + (
            f" and {g.covers_more} more" if g.covers_more else "") or "nothing now"
        clusters = f" on {e(', '.join(g.clusters))}" if g.clusters else ""
        since = time_tag(g.since, now) if g.since else "-"
        lift = f'<code class="cmd">{e(lift_gate(g.name))}</code>' if when != "starts" else "-"
        rows.append(
            f'<tr data-gate="{e(g.name)}"><th scope="row">{e(g.name)}</th>'
            f"<td>{e(g.action)}{clusters}</td><td>{e(g.reason)}</td>"
            f"<td>{e(g.owner or '-')}</td><td class=\"since\">{since}</td>"
            f"<td>{timing}{windows}</td><td>{covered}</td>"
            f"<td><code>{e(g.file)}</code></td><td>{lift}</td></tr>")
    return (f"<h2>{e(title)}</h2><div class=\"scroll\"><table><thead><tr><th>Gate</th>"
            "<th>Action</th><th>Reason</th><th>Owner</th><th>Since</th><th>When</th>"
            "<th>Covers now</th><th>File</th><th>To lift</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")
