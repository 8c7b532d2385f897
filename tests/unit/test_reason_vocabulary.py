"""One vocabulary of reasons: every machine-readable reason gitgate reports is a member of
`gitgate.errors.Reason`, and no module outside errors.py spells one as a string literal."""

from __future__ import annotations

import ast
from pathlib import Path

from gitgate.errors import Reason

PACKAGE = Path(__file__).resolve().parents[2] / "gitgate"


def reason_literals(source: str) -> list[tuple[int, str]]:
    """Reason texts spelled as string literals (an `__all__` list names types, not reasons)."""
    values = {r.value for r in Reason}
    tree = ast.parse(source)
    exported = {id(node) for assign in ast.walk(tree) if isinstance(assign, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in assign.targets)
                for node in ast.walk(assign.value)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in values
            and id(node) not in exported]


def test_no_reason_is_spelled_outside_errors_py():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {value!r}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "errors.py"
             for line, value in reason_literals(path.read_text())]
    assert found == [], "use gitgate.errors.Reason instead of these literals:\n" + "\n".join(found)


def test_the_check_finds_a_literal():
    assert reason_literals('result.reason = "PruneBlocked"\n') == [(1, "PruneBlocked")]
    assert reason_literals("result.reason = Reason.PRUNE_BLOCKED\n") == []
    assert reason_literals('__all__ = ["InvalidGate"]\n') == []


def test_reasons_are_camel_case_words_and_serialise_as_text():
    import json
    for reason in Reason:
        assert reason.value[0].isupper() and reason.value.isalnum()
    assert json.dumps({"reason": Reason.SUSPENSION_NOT_OBSERVED}) == (
        '{"reason": "SuspensionNotObserved"}')


def verdict_comparisons(source: str) -> list[tuple[int, str]]:
    """A verdict compared as a string literal (`x == "apply"`, `x in ("held", ...)`): the
    verdicts are `gitgate.model.Verdict`'s members, spelled nowhere else."""
    from gitgate.model import Verdict
    values = {v.value for v in Verdict}
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare) or "verdict" not in ast.unparse(node).replace(
                "Verdict.", ""):
            continue  # a Pod's phase "Failed" is not a verdict
        for side in (node.left, *node.comparators):
            literals = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
            found += [(node.lineno, c.value) for c in literals
                      if isinstance(c, ast.Constant) and c.value in values]
    return found


def test_no_verdict_is_compared_as_a_string():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {value!r}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for line, value in verdict_comparisons(path.read_text())]
    assert found == [], "use gitgate.model.Verdict instead of these literals:\n" + "\n".join(found)
    assert verdict_comparisons('if b.verdict != "removed": pass\n') == [(1, "removed")]
    assert verdict_comparisons('x = verdict in ("held", "apply")\n') == [(1, "held"), (1, "apply")]
    assert verdict_comparisons("if b.verdict == Verdict.REMOVED: pass\n") == []
    assert verdict_comparisons('if phase.lower() == "failed": pass\n') == []
