"""The JSON documents gitgate prints, checked against their published schemas."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO_ROOT / "docs/schema/gitgate.io_v1alpha1.json").read_text())


def validate(document: dict, kind: str) -> None:
    assert document["apiVersion"] == "gitgate.io/v1alpha1" and document["kind"] == kind
    Draft202012Validator.check_schema(SCHEMA)
    errors = sorted(Draft202012Validator(SCHEMA["$defs"][kind] | {"$defs": SCHEMA["$defs"]})
                    .iter_errors(document), key=str)
    assert errors == [], "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    assert list(Draft202012Validator(SCHEMA).iter_errors(document)) == []
