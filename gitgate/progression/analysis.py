"""A rollout's analysis: each check measured on each released cluster every `interval`
while the wave bakes, each measurement judged against `failIf`, and the failures counted
against `failureLimit`. A measurement that says nothing (the server is down or answers
an error, the query returns no series or NaN) is a failure, never a pass. Pure: the
measuring (`Measure`) and the clock (`now`) come from the caller."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from gitgate.karmada.waves import Analyse, Judged
from gitgate.model.analysisspec import Check, Provider
from gitgate.model.promql import substituted
from gitgate.timespec import rfc3339


@dataclass(frozen=True)
class Sample:
    """What one instant query gave: the values of its series (a scalar is one), or why
    there is none (`error`)."""

    values: tuple[float, ...] = ()
    error: str = ""


Measure = Callable[[Provider, str], Sample]  # (provider, query) -> what it answered


@dataclass(frozen=True)
class Tally:
    """One check on one cluster, over the wave so far."""

    failures: int
    measured: datetime  # when last measured
    ok: bool  # the last measurement passed
    note: str  # what the last measurement said

    def as_dict(self) -> dict[str, object]:
        return {"failures": self.failures, "measured": rfc3339(self.measured), "ok": self.ok,
                "note": self.note}


def judged_sample(check: Check, sample: Sample) -> tuple[bool, str]:
    """(passed, what it says) for one measurement."""
    if sample.error:
        return False, f"cannot be evaluated: {sample.error}"
    if not sample.values:
        return False, "the query returns no data"
    failing = [v for v in sample.values if check.fail_if.fails(v)]
    if failing:
        return False, f"{failing[0]:g} {check.fail_if.text()}"
    return True, f"{max(sample.values):g}, passes (fails if {check.fail_if.text()})"


def key_of(check: str, cluster: str) -> str:
    return f"{check}/{cluster}"


def read_record(text: str) -> dict[str, Tally]:
    """The record a rollout state keeps; unreadable or absent: nothing measured yet."""
    try:
        data = json.loads(text) if text else {}
        return {key: Tally(int(v["failures"]), datetime.fromisoformat(
            str(v["measured"]).replace("Z", "+00:00")), bool(v["ok"]), str(v["note"]))
            for key, v in data.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def query_for(check: Check, cluster: str, bundle: str, revision: str) -> str:
    return substituted(check.query, {"cluster": cluster, "bundle": bundle,
                                     "revision": revision})


def analyser(checks: tuple[Check, ...], bundle: str, revision: str,
             measure: Measure | None) -> Analyse:
    """The analysis of one bundle's rollout at `revision`, measuring through `measure`
    (None: a command that queries nothing; it judges on what is recorded, and a check never
    measured holds nothing)."""

    def analyse(record: str, released: tuple[str, ...], now: datetime) -> Judged:
        tallies = read_record(record)
        failed, waiting = "", ""
        due: list[datetime] = []
        for check in checks:
            for cluster in released:
                key = key_of(check.name, cluster)
                tally = tallies.get(key)
                if measure is not None and (
                        tally is None or now >= tally.measured + check.interval):
                    tally = _measured(check, cluster, bundle, revision, measure, tally, now)
                    tallies[key] = tally
                where = f"{check.name} on {cluster}"
                if tally is None:
                    waiting = waiting or f"{where}: not measured yet"
                    continue
                due.append(tally.measured + check.interval)
                if tally.failures > check.failure_limit and not failed:
                    failed = (f"{where} failed {tally.failures} time(s), past its "
                              f"failureLimit {check.failure_limit}: {tally.note}")
                elif not tally.ok and not waiting:
                    waiting = (f"{where}: {tally.note} ({tally.failures} of "
                               f"{check.failure_limit} failure(s) allowed)")
        text = json.dumps({k: t.as_dict() for k, t in sorted(tallies.items())},
                          sort_keys=True)
        return Judged(text, failed, holding=not (waiting or failed), waiting=waiting,
                      next_check=min(due) if due else None)

    return analyse


def _measured(check: Check, cluster: str, bundle: str, revision: str, measure: Measure,
              tally: Tally | None, now: datetime) -> Tally:
    try:
        sample = measure(check.provider, query_for(check, cluster, bundle, revision))
    except Exception as exc:  # a measurer that breaks says nothing: a failure, never a pass
        sample = Sample(error=type(exc).__name__)
    ok, note = judged_sample(check, sample)
    failures = (tally.failures if tally else 0) + (0 if ok else 1)
    return Tally(failures, now, ok, note)
