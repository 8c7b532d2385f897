"""The JUnit report carries each case's render time, as measured (a plain-data report in;
the rendering itself is timed by the render stage, whatever the machine's speed)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gitgate.check import Case, Report
from gitgate.output.checkreport import junit_xml


def test_each_case_carries_its_time_and_the_suite_their_sum():
    report = Report((Case("source.raw", "apps/a", seconds=0.25),
                     Case("source.helm", "apps/b", seconds=1.5),
                     Case("bundle", "a")))
    root = ET.fromstring(junit_xml(report))
    times = {c.get("name"): c.get("time") for c in root.iter("testcase")}
    assert times == {"apps/a": "0.250", "apps/b": "1.500", "a": "0.000"}
    assert root.get("time") == "1.750"
