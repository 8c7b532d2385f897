"""Gate files: parse and validate. A file that cannot be read or validated becomes an
InvalidGate, which the evaluator turns into a hold on every bundle (fail closed)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

from gitgate.errors import ConfigError, GateSpecError
from gitgate.gate.cron import cron_problem
from gitgate.model import Action, Approval, Gate, GateText, InvalidGate, Unreadable, Window
from gitgate.model.gaterule import SPEC_FIELDS, SpecKey, ValueKind
from gitgate.timespec import parse_duration, parse_time
from gitgate.yamlio import YamlSyntaxError, load_documents

API_VERSION = "gitgate.io/v1alpha1"
KIND = "Gate"
PAUSED_FOR = "gitgate.io/paused-for"  # annotation: the selector `gitgate pause` was given
PAUSED_BY = "gitgate.io/paused-by"  # annotation: who ran `gitgate pause` (their git identity)
PAUSED_AT = "gitgate.io/paused-at"  # annotation: when
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_TOP_KEYS = {"apiVersion", "kind", "metadata", "spec"}
_META_KEYS = {"name", "labels", "annotations"}
_SPEC_KEYS = {f.metadata["spec"]["key"] for f in SPEC_FIELDS}
_REASON_KEYS = {"reason", "by", "at"}
_WINDOW_KEYS = {"cron", "duration", "timeZone"}
_APPROVE_KEYS = {"bundle", "digest"}


def _unknown(data: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        path = tuple(p for p in (where + extra[0]).replace("[", ".").replace("]", "").split("."))
        raise GateSpecError(f"unknown field(s) {', '.join(where + k for k in extra)}; "
                            f"allowed: {', '.join(sorted(allowed))}", path)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise GateSpecError(f"{where} must be a mapping")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise GateSpecError(f"{where} must be a list of non-empty strings")
    return tuple(value)


def _value(key: SpecKey, value: Any) -> Any:
    """A `spec` key of a known kind, read and checked (None when absent)."""
    where = f"spec.{key['key']}"
    if value is None:
        return None
    if key["kind"] is ValueKind.TIME:
        return parse_time(value, where)
    if not isinstance(value, str) or not value.strip():
        raise GateSpecError(f"{where} must be a non-empty string: "
                            f"{key['schema'].get('description', '')}")
    return value.strip()


def _window(value: Any, index: int) -> Window:
    where = f"spec.windows[{index}]"
    data = _mapping(value, where)
    _unknown(data, _WINDOW_KEYS, where + ".")
    cron = data.get("cron")
    problem = cron_problem(cron)
    if problem or not croniter.is_valid(cron):
        raise GateSpecError(f"{where}.cron {cron!r} is not a standard cron expression: "
                            f"{problem or 'croniter cannot read it'}")
    try:  # a valid expression may still never fire (the 30th of February)
        croniter(cron, datetime(2026, 1, 1), max_years_between_matches=8).get_next(datetime)
    except (CroniterBadDateError, CroniterError, ValueError, OverflowError):
        raise GateSpecError(f"{where}.cron {cron!r} never fires (no such date in 8 "
                            "years)") from None
    zone = data.get("timeZone", "UTC")
    try:
        ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError):
        raise GateSpecError(f"{where}.timeZone {zone!r} is not an IANA time zone") from None
    if "duration" not in data:
        raise GateSpecError(f"{where}.duration is required")
    return Window(str(cron), parse_duration(data["duration"]), str(zone))


def _approvals(value: Any) -> tuple[Approval, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out = []
    for index, item in enumerate(items):
        where = f"spec.approve[{index}]" if isinstance(value, list) else "spec.approve"
        data = _mapping(item, where)
        _unknown(data, _APPROVE_KEYS, where + ".")
        bundle, digest = data.get("bundle"), data.get("digest")
        if not isinstance(bundle, str) or not bundle:
            raise GateSpecError(f"{where}.bundle is required")
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise GateSpecError(
                f"{where}.digest must be the 64-hex sha256 that `gitgate plan` shows")
        out.append(Approval(bundle, digest))
    return tuple(out)


def _signed(reason: str, by: Any, at: Any) -> str:
    """`INC-7 (Alice, 2026-11-24T03:00:00Z)`: a reason with who gave it (their name; the gate
    file keeps the email too) and when, as known."""
    who = by.split(" <")[0].strip() if isinstance(by, str) else ""
    said = ", ".join(str(v) for v in (who, at) if isinstance(v, str | datetime) and str(v))
    return f"{reason} ({said})" if said else reason


def _more_reasons(value: Any) -> tuple[tuple[str, str], ...]:
    """`spec.reasons`: later pauses of the gate's selector, each with who and when. Returns
    (reason, the reason as shown)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise GateSpecError("spec.reasons must be a list of {reason, by, at}")
    out = []
    for index, item in enumerate(value):
        where = f"spec.reasons[{index}]"
        data = _mapping(item, where)
        _unknown(data, _REASON_KEYS, where + ".")
        reason = data.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise GateSpecError(f"{where}.reason is required")
        at = data.get("at")
        if at is not None:
            parse_time(at, f"{where}.at")
        out.append((reason.strip(), _signed(reason.strip(), data.get("by"), at)))
    return tuple(out)


def gate_from_data(data: Any, file: str) -> Gate:
    data = _mapping(data, "a Gate document")
    _unknown(data, _TOP_KEYS, "")
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise GateSpecError(f"expected apiVersion: {API_VERSION} and kind: {KIND}")
    meta = _mapping(data.get("metadata"), "metadata")
    _unknown(meta, _META_KEYS, "metadata.")
    name = meta.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise GateSpecError("metadata.name must be a lowercase DNS name")
    spec = _mapping(data.get("spec"), "spec")
    _unknown(spec, _SPEC_KEYS, "spec.")
    reason = spec.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise GateSpecError("spec.reason is required: say why the bundles are held")
    more = _more_reasons(spec.get("reasons"))
    first = _signed(reason.strip(), _annotation(meta, PAUSED_BY), _annotation(meta, PAUSED_AT))
    bundles = _strings(spec.get("bundles"), "spec.bundles")
    match_labels: dict[str, str] = {}
    if spec.get("selector") is not None:
        selector = _mapping(spec["selector"], "spec.selector")
        _unknown(selector, {"matchLabels"}, "spec.selector.")
        labels = _mapping(selector.get("matchLabels"), "spec.selector.matchLabels")
        if not labels or not all(isinstance(v, str) for v in labels.values()):
            raise GateSpecError("spec.selector.matchLabels must map label names to strings")
        match_labels = {str(k): v for k, v in labels.items()}
    if not bundles and not match_labels:
        raise GateSpecError("spec.bundles or spec.selector.matchLabels is required")
    try:
        action = Action(spec.get("action", "hold"))
    except ValueError:
        raise GateSpecError(
            f"spec.action must be hold or suspend, not {spec.get('action')!r}") from None
    clusters = _strings(spec.get("clusters"), "spec.clusters")
    if clusters and action is not Action.SUSPEND:
        raise GateSpecError(
            "spec.clusters only works with action: suspend (hold is all or nothing)")
    read = {f.name: _value(f.metadata["spec"], spec.get(f.metadata["spec"]["key"]))
            for f in SPEC_FIELDS if f.metadata["spec"]["kind"] is not None}
    read["owner"] = read.get("owner") or _annotation(meta, PAUSED_BY)
    windows = spec.get("windows")
    if windows is not None and not isinstance(windows, list):
        raise GateSpecError("spec.windows must be a list")
    return Gate(
        name=name, file=file, action=action, bundles=bundles,
        reason="; ".join([first, *(shown for _, shown in more)]) if more else reason.strip(),
        reasons=(reason.strip(), *(said for said, _ in more)),
        match_labels=match_labels, clusters=clusters,
        windows=tuple(_window(w, i) for i, w in enumerate(windows or [])),
        approvals=_approvals(spec.get("approve")),
        paused_for=_annotation(meta, PAUSED_FOR), paused_at=_moment(_annotation(meta, PAUSED_AT)),
        **read)


def _moment(text: str | None) -> datetime | None:
    """An annotation's time; None when absent or not a time (it only informs people)."""
    if text is None:
        return None
    try:
        return parse_time(text, PAUSED_AT)
    except ConfigError:
        return None


def _annotation(meta: dict[str, Any], key: str) -> str | None:
    value = (meta.get("annotations") or {}).get(key)
    return value if isinstance(value, str) else None


def parse_gate_file(text: GateText, file: str) -> tuple[list[Gate], list[InvalidGate]]:
    """All gates of one file, or the reason the file is invalid (then none of its gates count)."""
    if text is None:
        return [], [InvalidGate(file, "cannot read the gate file")]
    if isinstance(text, Unreadable):
        return [], [InvalidGate(file, text.why)]
    try:
        documents = list(load_documents(text, key_lines=True))
    except YamlSyntaxError as exc:
        return [], [InvalidGate(file, str(exc), exc.line)]
    gates: list[Gate] = []
    for doc in documents:
        try:
            gates.append(gate_from_data(doc.data, file))
        except ConfigError as exc:
            path = getattr(exc, "path", ()) or _path_in_message(exc.message)
            return [], [InvalidGate(file, str(exc), doc.line_of(path))]
    if not gates:
        return [], [InvalidGate(file, "the gate file is empty; delete it to resume")]
    return gates, []


def _path_in_message(message: str) -> tuple[str, ...]:
    """Messages start with the field they are about (`spec.windows[0].cron ...`)."""
    first = message.split(" ", 1)[0]
    return tuple(p for p in first.replace("[", ".").replace("]", "").split(".") if p)


def parse_gates(files: dict[str, GateText]) -> tuple[list[Gate], list[InvalidGate]]:
    """Gates of every file (path -> text); two gates with one name are both invalid."""
    gates: list[Gate] = []
    invalid: list[InvalidGate] = []
    for file in sorted(files):
        found, bad = parse_gate_file(files[file], file)
        gates += found
        invalid += bad
    names: dict[str, str] = {}
    for gate in gates:
        other = names.setdefault(gate.name, gate.file)
        if other != gate.file:
            invalid.append(InvalidGate(gate.file, f"gate name {gate.name!r} is also used in "
                                                   f"{other}"))
    return gates, invalid
