"""Bounded concurrency for independent API requests: the answers come back in the order the
work was given, so what the engine records (and reports) does not depend on thread timing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from gitgate.errors import GitgateError

MAX_CONCURRENCY = 32  # the API client's connection pool holds this many connections
Item = TypeVar("Item")
Answer = TypeVar("Answer")


def fan_out(work: Callable[[Item], Answer], items: Sequence[Item],
            workers: int) -> list[Answer | GitgateError]:
    """`work` on every item, at most `workers` at a time; per item its answer or the
    GitgateError it raised, in item order. Any other exception is a bug and propagates."""

    def caught(item: Item) -> Answer | GitgateError:
        try:
            return work(item)
        except GitgateError as exc:
            return exc

    if workers <= 1 or len(items) <= 1:
        return [caught(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items)),
                            thread_name_prefix="gitgate-apply") as pool:
        return list(pool.map(caught, items))
