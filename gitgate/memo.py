"""Work carried from one pass to the next: values derived from objects that did not change.

The render cache hands back the very same rendered source while its files are unchanged, so
whatever a pure stage derives from it (its finished objects, its bundles, a bundle's plan and
content hashes) can be handed back too, keyed by that object's identity and the stage's
other inputs. A loop pass at an unchanged revision then costs the scan and the keys, not a
re-derivation of every object.

A value is kept while passes use it: each pass keeps what it used, and what the pass before
it used but this one did not is dropped. The memo holds the object a value derives from, so
the identity in the key can never be reused by another object while the entry lives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class Memo:
    def __init__(self) -> None:
        self._used: dict[tuple[str, int, Hashable], tuple[object, Any]] = {}
        self._previous: dict[tuple[str, int, Hashable], tuple[object, Any]] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def derive(self, stage: str, origin: object, inputs: Hashable,
               compute: Callable[[], T]) -> T:
        """`compute()`, or what it returned for the same `origin` object and `inputs` in this
        pass or the one before. `compute` must depend on nothing else."""
        key = (stage, id(origin), inputs)
        with self._lock:
            found = self._used.get(key) or self._previous.get(key)
            if found is not None and found[0] is origin:
                self._used[key] = found
                self.hits += 1
                return found[1]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            self._used[key] = (origin, value)
        return value

    def next_pass(self) -> None:
        """Start a pass: what the last pass used is kept for this one, the rest dropped."""
        with self._lock:
            self._previous, self._used = self._used, {}
            self.hits = 0


def derive(memo: Memo | None, stage: str, origin: object, inputs: Hashable,
           compute: Callable[[], T]) -> T:
    """`memo.derive(...)`, or just `compute()` without a memo (a one-shot command)."""
    return compute() if memo is None else memo.derive(stage, origin, inputs, compute)
