"""`gitgate check` for CI: one test case per source (does it render), per bundle (what the plan
does with it) and per gate file (is it valid, does it cover anything). Pure: rendered repo +
plan -> report (the output package prints it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitgate.errors import Reason
from gitgate.model import Problem, described
from gitgate.plan import Plan, unplaced
from gitgate.render.pipeline import RepoRender


@dataclass(frozen=True)
class Failure:
    type: str  # a Reason: what kind of failure, for CI systems that group by it
    message: str  # file:line and what to do, one line


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    failures: tuple[Failure, ...] = ()
    file: str | None = None
    seconds: float = 0.0
    note: str = ""  # what passed, for the report's system-out

    def as_dict(self) -> dict[str, object]:
        return {"class": self.classname, "name": self.name, "file": self.file,
                "seconds": round(self.seconds, 3), "note": self.note,
                "failures": [{"type": f.type, "message": f.message} for f in self.failures]}


@dataclass(frozen=True)
class Report:
    cases: tuple[Case, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> int:
        return sum(1 for c in self.cases if c.failures)

    @property
    def passed(self) -> int:
        return len(self.cases) - self.failed

    @property
    def ok(self) -> bool:
        return self.failed == 0

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.cases)


def check_report(result: RepoRender, plan: Plan) -> Report:
    cases: list[Case] = []
    sources = {r.source.path for r in result.rendered}
    repo_level = [p for p in result.problems if p.source not in sources]
    if repo_level:
        cases.append(Case("config", "gitgate.yaml", tuple(
            Failure(p.reason, f"{p.location()}: {p.message}") for p in repo_level),
            "gitgate.yaml"))
    lost: dict[str, list[Problem]] = {}  # bundles that lost their name to another source's
    for problem in plan.problems:
        if problem.source in sources and problem not in result.problems:
            lost.setdefault(problem.source, []).append(problem)
    for rendered in result.rendered:
        source = rendered.source
        cases.append(Case(f"source.{source.kind}", source.path, tuple(
            Failure(p.reason, f"{p.location()}: {p.message}")
            for p in (*rendered.problems, *lost.get(source.path, ()))),
            source.path, rendered.seconds, f"{len(rendered.objects)} objects"))
    failed_sources = {r.source.path for r in result.rendered if r.failed}
    for item in plan.bundles:
        folder = item.bundle.source.path
        if folder in failed_sources:  # said once, in the source's case
            failures: tuple[Failure, ...] = (Failure(Reason.RENDER_FAILED, (
                f"not planned: its source {folder} failed (see that case)")),)
            cases.append(Case("bundle", item.bundle.name, failures, folder))
            continue
        if item.bundle.failed:  # failed after rendering: a takeover, a tenant's rule, a clash
            cases.append(Case("bundle", item.bundle.name, tuple(
                Failure(p.reason, f"{p.location()}: {p.message}")
                for p in item.bundle.problems), folder))
            continue
        why = described(item.verdict.reasons)
        nowhere = unplaced(item)
        if nowhere is not None:  # it would report ok, and reach no cluster
            cases.append(Case("bundle", item.bundle.name, (
                Failure(nowhere.reason, f"{nowhere.location()}: {nowhere.message}"),), folder))
            continue
        cases.append(Case("bundle", item.bundle.name, (), folder, 0.0,
                          f"{item.verdict.verdict}" + (f" ({why})" if why else "")))
    cases += _gate_cases(plan, any(r.failed for r in result.rendered) or bool(repo_level))
    return Report(tuple(cases))


def _gate_cases(plan: Plan, some_source_failed: bool) -> list[Case]:
    """A gate covering no bundle fails, unless a source failed to render: its bundles are
    missing from the plan, and the gate may well be meant for them (no cascade)."""
    invalid_files = {g.file: g for g in plan.invalid_gates}
    cases = []
    for file in sorted({s.gate.file for s in plan.gates} | set(invalid_files)):
        failures = []
        notes = []
        if file in invalid_files:
            bad = invalid_files[file]
            where = f"{file}:{bad.line}" if bad.line else file
            held = "every bundle of its tenant" if bad.within else "every bundle"
            failures.append(Failure(Reason.INVALID_GATE, f"{where}: {bad.message} (an invalid "
                                    f"gate holds {held})"))
        for state in plan.gates:
            if state.gate.file != file:
                continue
            if state.covers:
                notes.append(f"{state.gate.name}: {'active' if state.active else 'inactive'}, "
                             f"covers {', '.join(state.covers)}")
            elif some_source_failed:
                notes.append(f"{state.gate.name} covers no bundle now, but a source failed to "
                             "render: fix it first")
            else:
                failures.append(Failure(Reason.GATE_MATCHES_NOTHING, (
                    f"{file}: gate {state.gate.name} matches no bundle; check spec.bundles and "
                    "spec.selector")))
        cases.append(Case("gate", file, tuple(failures), file, 0.0, "; ".join(notes)))
    return cases
