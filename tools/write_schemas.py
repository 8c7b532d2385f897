"""Write the parts of docs/schema that gitgate's records and fields define:
- in gitgate.io_v1alpha1.json, `clusterState` from the fields of `karmada.dispatch.ClusterState`
  (through `status.bundlestate.ClusterRecord.schema`) and `gate` from the fields of
  `status.gaterecord.GateRecord` (a `model.gaterule.ShownGate` and what a plan evaluated);
- in gate.json, the gate file's `spec` keys from the fields of `model.gaterule.Gate`.
Run it after adding a cluster signal or a gate field; tests/unit/test_bundle_state.py and
tests/unit/test_gate_record.py fail while a committed schema differs.

    python tools/write_schemas.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gitgate.model.gaterule import spec_schema  # noqa: E402
from gitgate.status.bundlestate import ClusterRecord  # noqa: E402
from gitgate.status.gaterecord import GateRecord  # noqa: E402

SCHEMA = ROOT / "docs" / "schema" / "gitgate.io_v1alpha1.json"
GATE_SCHEMA = ROOT / "docs" / "schema" / "gate.json"


def with_definition(text: str, name: str, definition: dict[str, Any]) -> str:
    """`text` (the schema file) with `$defs.name` replaced by `definition`, the rest of the
    file as it was written."""
    key = f'\n    "{name}": '
    start = text.index(key) + len(key)
    _, length = json.JSONDecoder().raw_decode(text[start:])
    return text[:start] + _dumped(definition, "    ") + text[start + length:]


def _dumped(value: Any, indent: str, depth: int = 2) -> str:
    """`value` as JSON, an object's members one per line down to `depth`, then one line."""
    if not isinstance(value, dict) or depth == 0:
        return json.dumps(value, ensure_ascii=False)
    inner = indent + "  "
    members = ",\n".join(f"{inner}{json.dumps(k)}: {_dumped(v, inner, depth - 1)}"
                          for k, v in value.items())
    return "{\n" + members + "\n" + indent + "}"


def with_gate_spec(text: str) -> str:
    """`text` (gate.json) with `properties.spec.properties` written from the gate's fields;
    the file is written whole, its members one per line down to the spec's keys."""
    schema = json.loads(text)
    schema["properties"]["spec"]["properties"] = spec_schema()
    return _dumped(schema, "", depth=4) + "\n"


def _written(path: Path, text: str) -> None:
    json.loads(text)  # still one JSON document
    if text != path.read_text():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")


def main() -> int:
    text = SCHEMA.read_text()
    text = with_definition(text, "clusterState", ClusterRecord.schema())
    _written(SCHEMA, with_definition(text, "gate", GateRecord.schema()))
    _written(GATE_SCHEMA, with_gate_spec(GATE_SCHEMA.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
