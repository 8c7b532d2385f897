"""The web page's gates: active, upcoming and not holding, with whom to ask, what each
covers now and the command that lifts it. Pure: a `Snapshot` in, a page out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gitgate.output.weblayout import Snapshot, bundle_href, e, layout, lift_gate, time_tag


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
            timing = (f"until {time_tag(g.get('until'), now)}" if g.get("until") else
                      f"window ends {time_tag(g.get('nextChange'), now)}" if g.get("nextChange")
                      else "until the file is removed")
        elif when == "starts":
            timing = f"starts {time_tag(g.get('nextChange'), now)}"
        else:
            timing = f"ended {time_tag(g.get('until'), now)}" if g.get("until") else "-"
        windows = "".join(f"<div><code>{e(w)}</code></div>" for w in g.get("windows") or [])
        covers = [str(c) for c in g.get("covers") or []]
        more = int(g.get("coversMore") or 0)
        covered = ", ".join(f'<a href="{e(bundle_href(c))}">{e(c)}</a>' for c in covers) + (
            f" and {more} more" if more else "") or "nothing now"
        clusters = (f" on {e(', '.join(g.get('clusters') or []))}" if g.get("clusters")
                    else "")
        since = time_tag(g.get("since"), now) if g.get("since") else "-"
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
