"""`check`: the report as text, as JSON and as JUnit XML for CI systems. Pure."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from gitgate.check import Report


def check_document(report: Report) -> dict[str, Any]:
    return {"ok": report.ok, "cases": [c.as_dict() for c in report.cases]}


def check_text(report: Report) -> str:
    lines = []
    for case in report.cases:
        lines.append(f"{'ok' if not case.failures else 'FAIL':4}  {case.name}")
        lines += [f"      {failure}" for failure in case.failures]
    lines.append(f"{report.passed} of {len(report.cases)} checks ok")
    return "\n".join(lines) + "\n"


def junit_xml(report: Report) -> str:
    suite = ET.Element("testsuite", name="gitgate check", tests=str(len(report.cases)),
                       failures=str(report.failed), errors="0", skipped="0")
    for case in report.cases:
        element = ET.SubElement(suite, "testcase", classname=case.classname, name=case.name)
        if case.file:
            element.set("file", case.file)
        for failure in case.failures:
            node = ET.SubElement(element, "failure", message=failure.splitlines()[0][:500])
            node.text = failure
    suites = ET.Element("testsuites", name="gitgate", tests=str(len(report.cases)),
                        failures=str(report.failed))
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
