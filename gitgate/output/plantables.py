"""`plan` and `gates`: JSON documents and text tables. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gitgate.apiserver.changeset import Change
from gitgate.apply.standing import planned_standing
from gitgate.errors import Reason
from gitgate.karmada.effective import MemberView
from gitgate.karmada.syncsteps import sync_plan
from gitgate.model import ObjectRef
from gitgate.model.chartspec import LockedChart
from gitgate.output.console import invalid_gate_line, problem_line
from gitgate.output.documents import document, object_ref
from gitgate.output.tables import one_line, rfc3339, table
from gitgate.plan import BundlePlan, Plan, destination
from gitgate.status.gaterecord import GateRecord, InvalidGateRecord
from gitgate.timespec import age

ChartsBefore = Mapping[str, tuple[LockedChart, ...]]  # bundle name -> its locked charts then


def plan_document(plan: Plan, changes: list[Change] | None = None,
                  view: MemberView | None = None,
                  charts_before: ChartsBefore | None = None) -> dict[str, Any]:
    """`plan -o json`; with --kubeconfig each bundle's `changes` and the bundles it would
    remove, with --cluster what that member runs. `charts_before`: each
    bundle's locked charts at the revision it is compared with (what its record says is
    live, or `--since`), for each chart's `from`."""
    bundles = []
    for item in plan.bundles:
        verdict, meaning = item.verdict, planned_standing(item)
        versions = {ObjectRef.of(o): str(o.get("apiVersion", "")) for o in item.bundle.objects}
        bundles.append({
            "name": item.bundle.name,
            "source": {"path": item.bundle.source.path, "kind": str(item.bundle.source.kind)},
            "verdict": str(verdict.verdict),
            "reasons": [r.document() for r in meaning.reasons],
            "nextChange": rfc3339(verdict.next_change),
            **meaning.as_dict(),
            "digest": verdict.digest,
            "objects": [object_ref(ObjectRef.of(o), o["apiVersion"]) for o in item.desired],
            "heldObjects": [object_ref(r, versions.get(r, "")) for r in verdict.held_objects],
            "policies": list(item.policies),
            "clusters": destination(item),
            "rollout": _rollout_document(item),
            "hooks": _hooks_document(item),
            "charts": _charts_document(item, (charts_before or {}).get(item.bundle.name)),
            **({"changes": changes_document(changes, item.bundle.name)}
               if changes is not None else {}),
        })
    doc = document("Plan", {
        "revision": plan.revision,
        "at": rfc3339(plan.at),
        "bundles": bundles,
        "errors": [p.as_dict() for p in plan.problems]
        + [{"source": "gates", "file": g.file, "line": g.line, "reason": Reason.INVALID_GATE,
            "message": g.message} for g in plan.invalid_gates],
        "warnings": [p.as_dict() for p in plan.warnings],
    })
    if changes is not None:
        planned = {item.bundle.name for item in plan.bundles}
        doc["removedBundles"] = [{"name": name, "changes": changes_document(changes, name)}
                                 for name in sorted({c.bundle for c in changes} - planned)]
    if view is not None:
        doc["cluster"] = member_document(view)
    return doc


def _charts_document(item: BundlePlan,
                     before: tuple[LockedChart, ...] | None) -> list[dict[str, Any]]:
    """The charts the bundle fetches, as locked; `from`: that chart as the compared revision
    locked it (null: not known, or not locked then), `changed`: another archive now."""
    was = {e.dependency: e for e in before or ()}
    out = []
    for entry in item.bundle.source.options.locked:
        old = was.get(entry.dependency)
        out.append({"name": entry.ref.chart, "dependency": entry.dependency or None,
                    "repo": entry.ref.repo, "version": entry.version, "digest": entry.digest,
                    "from": {"version": old.version, "digest": old.digest}
                    if old is not None else None,
                    "changed": old is not None and old.digest != entry.digest})
    return out


def chart_lines(plan: Plan, charts_before: ChartsBefore | None = None) -> list[str]:
    """One line per bundle that fetches charts: each chart's version, and `6.5.0 → 6.6.0`
    where the compared revision locked another archive."""
    lines = []
    for item in plan.bundles:
        said = []
        for chart in _charts_document(item, (charts_before or {}).get(item.bundle.name)):
            was = chart["from"]
            if not chart["changed"]:
                said.append(f"{chart['name']} {chart['version']}")
            elif was["version"] != chart["version"]:
                said.append(f"{chart['name']} {was['version']} → {chart['version']}")
            else:
                said.append(f"{chart['name']} {chart['version']} (another archive: "
                            f"{was['digest'][:19]} → {chart['digest'][:19]})")
        if said:
            lines.append(f"{item.bundle.name}: {', '.join(said)}")
    return lines


def _rollout_document(item: BundlePlan) -> dict[str, Any] | None:
    """The bundle's `rollout` and, with --kubeconfig, where it is: the current wave, what it
    waits for and until when."""
    spec = item.bundle.source.options.rollout
    if spec is None:
        return None
    out: dict[str, Any] = {"spec": spec.as_dict()}
    if item.rollout is not None:
        state = item.rollout.state
        out.update(wave=min(state.wave + 1, len(spec.waves)), waves=len(spec.waves),
                   complete=state.complete(spec), halted=state.halted or None,
                   suspended=list(item.rollout.suspend),
                   waitingFor=item.rollout.waiting_for,
                   nextCheck=rfc3339(item.rollout.next_check))
    return out


def _hooks_document(item: BundlePlan) -> dict[str, Any] | None:
    """The bundle's sync steps (null without hooks) and the hooks it never runs; with
    --kubeconfig also where the sync is."""
    sync = sync_plan(item.bundle.objects)
    if not sync.has_hooks and not item.bundle.skipped:
        return None
    out: dict[str, Any] = {
        "steps": [{"phase": str(s.phase), "wave": s.wave,
                   "hooks": [object_ref(r) for r in s.hooks],
                   "templates": [object_ref(r) for r in s.templates]} for s in sync.steps],
        "onFail": [object_ref(r) for r in sync.on_fail],
        "skipped": [{"object": object_ref(r), "why": why} for r, why in item.bundle.skipped]}
    if item.hooks is not None:
        state = item.hooks.state
        out.update(step=min(state.step + 1, len(sync.steps)), failed=state.failed or None,
                   synced=item.hooks.done(len(sync.steps)),
                   waitingFor=item.hooks.waiting_for, nextCheck=rfc3339(item.hooks.next_check))
    return out


def phases_lines(plan: Plan) -> list[str]:
    """One line per bundle with hooks: its steps in order, and the hooks it skips."""
    lines = []
    for item in plan.bundles:
        sync = sync_plan(item.bundle.objects)
        if sync.has_hooks:
            where = f" (now: {item.hooks.waiting_for})" if item.hooks is not None else ""
            lines.append(f"{item.bundle.name}: " + " → ".join(
                f"{s.phase} {s.wave}: " + ", ".join(
                    [*(f"hook {r.kind}/{r.name}" for r in s.hooks),
                     *([f"{len(s.templates)} objects"] if s.templates else [])])
                for s in sync.steps) + where)
        for ref, why in item.bundle.skipped:
            lines.append(f"{item.bundle.name}: skipped {ref} ({why})")
    return lines


def _rollout_cell(item: BundlePlan) -> str:
    spec = item.bundle.source.options.rollout
    if spec is None:
        return "-"
    waves = " → ".join(w.selector.text() if w.selector else ",".join(w.clusters)
                       for w in spec.waves)
    if item.rollout is None:
        return waves
    state = item.rollout.state
    if state.complete(spec):
        return f"{waves}: done"
    return f"{waves}: {'halted at ' if state.halted else ''}wave {state.wave + 1}"


def plan_table(plan: Plan, *, wide: bool = False,
               charts_before: ChartsBefore | None = None) -> str:
    """NEXT CHANGE reads `in 2h` (the time itself with -o wide); WHY says what the verdict
    means and what changes it (`apply.standing`), cut to one line. Then the charts each
    bundle fetches (`chart_lines`) and the hooks."""
    head = ["BUNDLE", "VERDICT", "OBJECTS", "POLICIES", "CLUSTERS", "NEXT CHANGE", "DIGEST",
            "ROLLOUT", "WHY"]
    rows = [head + (["NEXT CHANGE AT"] if wide else [])]
    for item in plan.bundles:
        verdict = item.verdict
        why = planned_standing(item).line() or "-"
        row = [item.bundle.name, str(verdict.verdict), str(len(item.desired)),
               str(len(item.policies)), destination(item),
               age(verdict.next_change, plan.at) if verdict.next_change else "-",
               verdict.digest[:12], _rollout_cell(item), why if wide else one_line(why)]
        if wide:
            row.append(rfc3339(verdict.next_change) or "-")
        rows.append(row)
    lines = [f"revision {plan.revision} at {rfc3339(plan.at)}", table(rows)]
    charts = chart_lines(plan, charts_before)
    if charts:
        lines += ["", "charts:", *(f"  {line}" for line in charts)]
    phases = phases_lines(plan)
    if phases:
        lines += ["", "hooks:", *(f"  {line}" for line in phases)]
    lines += [problem_line(problem) for problem in plan.problems]
    lines += [problem_line(warning, warning=True) for warning in plan.warnings]
    lines += [invalid_gate_line(bad.file, bad.line, bad.message, bad.within)
              for bad in plan.invalid_gates]
    return "\n".join(lines) + "\n"


def plan_text(plan: Plan, changes: list[Change] | None = None, view: MemberView | None = None,
              *, wide: bool = False, charts_before: ChartsBefore | None = None) -> str:
    """`plan`'s table; with --kubeconfig the changes, with --cluster what that member runs."""
    return (plan_table(plan, wide=wide, charts_before=charts_before)
            + ("\n" + changes_table(changes) if changes is not None else "")
            + ("\n" + member_lines(view) if view is not None else ""))


def gates_document(plan: Plan) -> dict[str, Any]:
    return document("GateList", {
        "at": rfc3339(plan.at), "gates": [GateRecord.of(s).document() for s in plan.gates],
        "invalid": [InvalidGateRecord.of(g).document() for g in plan.invalid_gates]})


def gates_table(plan: Plan) -> str:
    rows = [["GATE", "FILE", "ACTION", "ACTIVE", "COVERS", "NEXT CHANGE", "REASON"]]
    for g in (GateRecord.of(s) for s in plan.gates):
        rows.append([g.name, g.file, g.action, "yes" if g.active else "no",
                     ",".join(g.covers) or "(nothing)", g.next_change or "-", g.reason])
    lines = [table(rows)]
    for bad in plan.invalid_gates:
        lines.append(f"invalid: {bad.file}: {bad.message} (holds every bundle)")
    return "\n".join(lines) + "\n"


def changes_document(changes: list[Change], bundle: str) -> list[dict[str, Any]]:
    return [c.as_dict() for c in changes if c.bundle == bundle]


def changes_table(changes: list[Change]) -> str:
    rows = [["BUNDLE", "ACTION", "OBJECT", "FIELDS"]] + [
        [c.bundle, c.action, str(c.ref), ", ".join(c.fields) or c.message or "-"]
        for c in changes]
    return table(rows) + "\n"


def _shown(ref: ObjectRef, op: dict[str, Any]) -> dict[str, Any]:
    """An override operation as printed: never a Secret's value."""
    if (ref.group, ref.kind) == ("", "Secret") and "value" in op:
        return {**op, "value": "<redacted>"}
    return op


def member_document(view: MemberView) -> dict[str, Any]:
    """`plan --cluster`: per bundle, each field Karmada overrides on that member."""
    return {"name": view.cluster, "notes": list(dict.fromkeys(view.notes)), "bundles": [
        {"name": bundle, "overrides": [{"object": object_ref(ref), "policy": policy,
                                        **_shown(ref, op)}
                                       for ref, policy, op in changes]}
        for bundle, changes in sorted(view.changes.items())]}


def member_lines(view: MemberView) -> str:
    lines = [f"on {view.cluster}:"]
    for bundle, changes in sorted(view.changes.items()):
        for ref, policy, op in changes:
            shown = _shown(ref, op)
            value = "" if op.get("operator") == "remove" else f" = {json.dumps(shown.get('value'))}"
            lines.append(f"  {bundle}: {ref} {op.get('operator')} {op.get('path')}{value} "
                         f"({policy})")
    if len(lines) == 1:
        lines.append("  no overrides: it runs every bundle as rendered")
    lines += [f"  note: {note}" for note in dict.fromkeys(view.notes)]
    return "\n".join(lines) + "\n"
