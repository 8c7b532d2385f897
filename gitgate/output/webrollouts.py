"""The web page's rollouts: each bundle's waves, released, baking or halted, with the command
that retries a halted wave. Pure: a `Snapshot` in, a page out."""

from __future__ import annotations

from datetime import timedelta

from gitgate.apply.inventory import Inventory
from gitgate.karmada.waves import RolloutState
from gitgate.output.weblayout import Snapshot, badge, bundle_href, e, layout, retry_halt
from gitgate.status.overview import rollout_of
from gitgate.timespec import age, duration_text


def rollout_waves(snap: Snapshot, inv: Inventory) -> str:
    """A bundle's waves: released, the current one with its bake or deadline, the rest."""
    spec = rollout_of(snap.overview, inv.bundle)
    state = RolloutState.from_json(inv.progression.rollout)
    waves = list(spec.waves) if spec is not None else []
    if state is None and not waves:
        return ""
    bake = spec.bake if spec is not None else timedelta(0)
    deadline = spec.deadline if spec is not None else timedelta(0)
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
    head = (f"<p>{'Complete.' if done else e(spec.waiting_for)} "
            f"Bake {e(duration_text(bake))}, deadline {e(duration_text(deadline))}, on failure "
            f"{e(spec.on_failure)}.</p>" if spec is not None else "")
    halted = (f'<p class="alert halted" role="alert">Halted: {e(state.halted)}. To retry the '
              f'wave: <code class="cmd">{e(retry_halt(inv.bundle))}</code></p>'
              if state is not None and state.halted else "")
    return (f"{halted}{head}<div class=\"scroll\"><table class=\"waves\"><thead><tr><th>#</th>"
            f"<th>Clusters</th><th>State</th></tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table></div>")


def rollouts_page(snap: Snapshot) -> str:
    parts = []
    for inv in sorted(snap.inventories, key=lambda i: i.bundle):
        shown = rollout_waves(snap, inv)
        if shown:
            parts.append(f'<section data-rollout="{e(inv.bundle)}"><h2>'
                         f'<a href="{e(bundle_href(inv.bundle))}">{e(inv.bundle)}</a> '
                         f"{badge(snap.verdict(inv))}</h2>{shown}</section>")
    if (snap.overview.get("rolloutsLeftOut")):
        parts.append('<p class="note">Too many rollouts to record: their waves are left out; '
                     "each bundle's page shows its progress.</p>")
    return layout("Rollouts", "".join(parts) or '<p class="empty">No bundle has a rollout.</p>',
                  snap, "rollouts")
