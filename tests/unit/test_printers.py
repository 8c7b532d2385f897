"""The printer registry behind every command's `-o`: each format prints the command's
document or its text, yaml the same fields as json, and a format nobody knows is one clear
error."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml

from gitgate.cli.flags import output_flag
from gitgate.errors import ConfigError
from gitgate.output.printers import DOCUMENT_FORMATS, PRINTERS, Printable, printed

DOC = {"apiVersion": "gitgate.io/v1alpha1", "kind": "Status", "bundles": [{"name": "shop"}]}
SHOWN = Printable(lambda: DOC, lambda wide: "WIDE" if wide else "TABLE",
                  own={"special": lambda: "OWN"})


def test_each_format_prints_the_document_or_the_text():
    assert json.loads(printed("json", SHOWN)) == DOC
    assert yaml.safe_load(printed("yaml", SHOWN)) == DOC
    assert printed("table", SHOWN) == "TABLE"
    assert printed("text", SHOWN) == "TABLE"
    assert printed("wide", SHOWN) == "WIDE"
    assert printed("special", SHOWN) == "OWN"


def test_an_unknown_format_is_one_clear_error_naming_the_known_ones():
    with pytest.raises(ConfigError) as caught:
        printed("jsonpath", SHOWN)
    assert "unknown output format 'jsonpath'" in caught.value.message
    assert all(name in caught.value.message for name in PRINTERS)


def test_a_command_without_a_table_says_so():
    with pytest.raises(ConfigError, match="no table"):
        printed("table", Printable(lambda: DOC))


def test_every_document_format_is_offered_wherever_json_is():
    parser = argparse.ArgumentParser()
    output_flag(parser, "table", "json")
    offered = next(a for a in parser._actions if a.dest == "output").choices
    assert list(offered or ()) == ["table", *DOCUMENT_FORMATS]
    assert parser.parse_args([]).output == "table"


def test_a_flag_offering_a_format_the_registry_lacks_is_refused():
    with pytest.raises(ConfigError, match="unknown output format 'xml'"):
        output_flag(argparse.ArgumentParser(), "table", "xml")
