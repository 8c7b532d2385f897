from datetime import UTC, datetime, timedelta

import pytest

from gitgate.gate.spec import parse_gate_file, parse_gates
from gitgate.model import Action
from gitgate.timespec import parse_duration

HEAD = "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: g}\n"


def test_full_gate_parses():
    gates, invalid = parse_gate_file(HEAD + """spec:
  bundles: [shop/*]
  selector: {matchLabels: {team: pay}}
  action: suspend
  clusters: [member2]
  reason: migration
  until: 2026-12-01T10:00:00+01:00
  windows:
    - {cron: "0 18 * * 5", duration: 62h, timeZone: Europe/Berlin}
  approve: {bundle: shop/carts, digest: "%s"}
""" % ("a" * 64), "gates/g.yaml")
    assert invalid == []
    (gate,) = gates
    assert gate.action is Action.SUSPEND and gate.clusters == ("member2",)
    assert gate.until == datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert gate.windows[0].duration == timedelta(hours=62)
    assert gate.approvals[0].bundle == "shop/carts"


@pytest.mark.parametrize("spec, words", [
    ("spec: {bundles: [a]}\n", "spec.reason is required"),
    ("spec: {reason: r}\n", "spec.bundles or spec.selector"),
    ("spec: {bundles: [a], reason: r, action: freeze}\n", "hold or suspend"),
    ("spec: {bundles: [a], reason: r, clusters: [m1]}\n", "only works with action: suspend"),
    ("spec: {bundles: [a], reason: r, until: tomorrow}\n", "RFC 3339"),
    ("spec: {bundles: [a], reason: r, until: '2026-12-01T10:00:00'}\n", "time zone offset"),
    ("spec: {bundles: [a], reason: r, resaon: typo}\n", "unknown field(s) spec.resaon"),
    ("spec: {bundles: [a], reason: r, windows: [{cron: '0 99 * * *', duration: 1h}]}\n",
     "cron"),
    ("spec: {bundles: [a], reason: r, windows: [{cron: '0 1 * * *', duration: 1h, "
     "timeZone: Mars/Base}]}\n", "IANA"),
    ("spec: {bundles: [a], reason: r, windows: [{cron: '0 1 * * *', duration: soon}]}\n",
     "duration"),
    ("spec: {bundles: [a], reason: r, approve: {bundle: a, digest: abc}}\n", "64-hex"),
])
def test_invalid_gates_say_what_is_wrong(spec, words):
    gates, invalid = parse_gate_file(HEAD + spec, "gates/g.yaml")
    assert gates == []
    assert words in invalid[0].message and invalid[0].file == "gates/g.yaml"


def test_yaml_error_has_a_line_and_empty_file_is_invalid():
    _, invalid = parse_gate_file(HEAD + "spec: {bundles: [a\n", "gates/g.yaml")
    assert invalid[0].line is not None
    _, invalid = parse_gate_file("", "gates/empty.yaml")
    assert "empty" in invalid[0].message


def test_duplicate_gate_names_across_files_are_invalid():
    text = HEAD + "spec: {bundles: [a], reason: r}\n"
    gates, invalid = parse_gates({"gates/a.yaml": text, "gates/b.yaml": text})
    assert len(gates) == 2 and invalid[0].file == "gates/b.yaml"


@pytest.mark.parametrize("text, seconds", [("62h", 62 * 3600), ("1h30m", 5400), ("2d", 172800),
                                           ("45s", 45)])
def test_durations(text, seconds):
    assert parse_duration(text).total_seconds() == seconds


def test_errors_point_at_the_line_of_the_bad_field():
    text = HEAD + """spec:
  bundles: [a]
  reason: r
  windows:
    - cron: "0 18 * * 5"
      duration: 62h
    - cron: "every friday"
      duration: 1h
"""
    _, invalid = parse_gate_file(text, "gates/g.yaml")
    assert invalid[0].line == 10 and "spec.windows[1].cron" in invalid[0].message


def test_a_gate_names_its_owner_or_who_paused_it():
    (gate,), _ = parse_gate_file(HEAD + "spec: {bundles: [a], reason: r, owner: ' team-db '}\n",
                                 "gates/g.yaml")
    assert gate.owner == "team-db"
    paused = ("apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: {name: g, annotations: "
              "{gitgate.io/paused-by: Alice}}\nspec: {bundles: [a], reason: r}\n")
    (gate,), _ = parse_gate_file(paused, "gates/g.yaml")
    assert gate.owner == "Alice"
    (gate,), _ = parse_gate_file(HEAD + "spec: {bundles: [a], reason: r}\n", "gates/g.yaml")
    assert gate.owner is None
    for bad in ("''", "[team]", "3"):
        text = HEAD + f"spec: {{bundles: [a], reason: r, owner: {bad}}}\n"
        gates, invalid = parse_gate_file(text, "gates/g.yaml")
        assert gates == [] and "spec.owner must be a non-empty string" in invalid[0].message
