"""`check`: the report as text, as JSON and as JUnit XML for CI systems. Pure."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from gitgate.check import Report
from gitgate.output.console import single_line
from gitgate.output.documents import document


def check_document(report: Report) -> dict[str, Any]:
    return document("CheckReport", {"ok": report.ok, "passed": report.passed,
                                    "failed": report.failed,
                                    "cases": [c.as_dict() for c in report.cases]})


def check_text(report: Report) -> str:
    lines = []
    for case in report.cases:
        lines.append(f"{'ok' if not case.failures else 'FAIL':4}  {case.classname:14} "
                     f"{single_line(case.name)}" + (f"  ({single_line(case.note)})"
                                                 if case.note and not case.failures else ""))
        lines += [f"      [{failure.type}] {single_line(failure.message)}"
                  for failure in case.failures]
    lines.append(f"{report.passed} of {len(report.cases)} checks ok")
    return "\n".join(lines) + "\n"


def junit_xml(report: Report) -> str:
    """One testcase per source, bundle and gate file; each failure once (its message), typed
    by reason; the time each source took to render."""
    suite = ET.Element("testsuite", name="gitgate check", tests=str(len(report.cases)),
                       failures=str(report.failed), errors="0", skipped="0",
                       time=f"{report.seconds:.3f}")
    for case in report.cases:
        element = ET.SubElement(suite, "testcase", classname=case.classname, name=case.name,
                                time=f"{case.seconds:.3f}")
        if case.file:
            element.set("file", case.file)
        for failure in case.failures:
            ET.SubElement(element, "failure", type=failure.type, message=failure.message)
        if case.note and not case.failures:
            ET.SubElement(element, "system-out").text = case.note
    suites = ET.Element("testsuites", name="gitgate", tests=str(len(report.cases)),
                        failures=str(report.failed), time=f"{report.seconds:.3f}")
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
