"""Write the parts of docs/schema/gitgate.io_v1alpha1.json that gitgate's records define:
`clusterState`, from the fields of `karmada.dispatch.ClusterState` (through
`status.bundlestate.ClusterRecord.schema`). Run it after adding a cluster signal;
tests/unit/test_bundle_state.py fails while the committed schema differs.

    python tools/write_schemas.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gitgate.status.bundlestate import ClusterRecord  # noqa: E402

SCHEMA = ROOT / "docs" / "schema" / "gitgate.io_v1alpha1.json"


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


def main() -> int:
    text = SCHEMA.read_text()
    written = with_definition(text, "clusterState", ClusterRecord.schema())
    json.loads(written)  # still one JSON document
    if written != text:
        SCHEMA.write_text(written)
        print(f"wrote {SCHEMA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
