"""The project's stand-in for Karmada's policy CRDs (used when ../shared is absent) says the
same as the real CRDs wherever it says anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.support.shared_data import FIXTURE_CRDS, shared_crds_dir

COMPARED = ("type", "required", "minItems", "enum", "format", "default")


def schema(path: Path) -> dict:
    crd = YAML(typ="safe").load(path.read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], crd


def differences(mine: dict, real: dict, where: str = "") -> list[str]:
    found = [f"{where or '.'}: {key} {mine[key]!r} != {real.get(key)!r}"
             for key in COMPARED if key in mine and mine[key] != real.get(key)]
    for name, child in (mine.get("properties") or {}).items():
        if name not in (real.get("properties") or {}):
            found.append(f"{where}.{name}: not in the real CRD")
        else:
            found += differences(child, real["properties"][name], f"{where}.{name}")
    if "items" in mine:
        found += differences(mine["items"], real.get("items") or {}, f"{where}[]")
    return found


@pytest.mark.parametrize("file", sorted(p.name for p in FIXTURE_CRDS.glob("*.yaml")))
def test_the_stand_in_agrees_with_karmadas_crds(file):
    real_dir = shared_crds_dir()
    if real_dir is None:
        pytest.skip("../shared/karmada-crds is not here to compare with")
    mine, my_crd = schema(FIXTURE_CRDS / file)
    real, real_crd = schema(real_dir / file)
    assert differences(mine, real) == []
    for key in ("group", "scope"):
        assert my_crd["spec"][key] == real_crd["spec"][key]
    assert my_crd["spec"]["names"] == real_crd["spec"]["names"]


def test_the_comparison_catches_a_difference():
    mine = {"type": "object", "properties": {"n": {"type": "string", "minItems": 2}}}
    real = {"type": "object", "properties": {"n": {"type": "string"}}}
    assert differences(mine, real) == [".n: minItems 2 != None"]
