"""`gitgate check` for CI: every source, bundle.yaml and gate file becomes a test case.
Pure: rendered repo + plan -> report (the output package prints it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitgate.plan import Plan
from gitgate.render.pipeline import RepoRender


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    failures: tuple[str, ...] = ()
    file: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"class": self.classname, "name": self.name, "file": self.file,
                "failures": list(self.failures)}


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


def check_report(result: RepoRender, plan: Plan) -> Report:
    cases: list[Case] = []
    sources = {r.source.path for r in result.rendered}
    repo_level = [p for p in result.problems if p.source not in sources]
    if repo_level:
        cases.append(Case("config", "gitgate.yaml", tuple(
            f"{p.location()}: {p.message}" for p in repo_level), "gitgate.yaml"))
    for rendered in result.rendered:
        source = rendered.source
        cases.append(Case(f"source.{source.kind}", source.path, tuple(
            f"{p.location()}: [{p.reason}] {p.message}" for p in rendered.problems),
            source.path))
    invalid_files = {g.file: g for g in plan.invalid_gates}
    gate_files = sorted({s.gate.file for s in plan.gates} | set(invalid_files))
    for file in gate_files:
        failures = []
        if file in invalid_files:
            bad = invalid_files[file]
            where = f"{file}:{bad.line}" if bad.line else file
            failures.append(f"{where}: {bad.message} (an invalid gate holds every bundle)")
        for state in plan.gates:
            if state.gate.file == file and not state.covers:
                failures.append(f"{file}: gate {state.gate.name} matches no bundle; check "
                                "spec.bundles and spec.selector")
        cases.append(Case("gate", file, tuple(failures), file))
    return Report(tuple(cases))
