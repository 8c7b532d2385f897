"""Bounded concurrency for independent API requests: the answers come back in the order the
work was given, so what the engine records (and reports) does not depend on thread timing.

The workers take the next item by its index and put its answer in its place: no future, no
condition and no queue per item. At 10,000 objects in a pass that bookkeeping (a
`concurrent.futures` future is two locks and a condition; each submission also checks for
an idle worker) was a fifth of the client's own CPU between requests (bench/results/history.md),
on the same 2 cores the API server needs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from gitgate.errors import GitgateError

MAX_CONCURRENCY = 32  # the API client's connection pool holds this many connections
Item = TypeVar("Item")
Answer = TypeVar("Answer")


def fan_out(work: Callable[[Item], Answer], items: Sequence[Item],
            workers: int) -> list[Answer | GitgateError]:
    """`work` on every item, at most `workers` at a time; per item its answer or the
    GitgateError it raised, in item order. Any other exception is a bug and propagates (the
    first one raised; no item is started after it)."""

    def caught(item: Item) -> Answer | GitgateError:
        try:
            return work(item)
        except GitgateError as exc:
            return exc

    if workers <= 1 or len(items) <= 1:
        return [caught(item) for item in items]
    answers: list[Answer | GitgateError | None] = [None] * len(items)
    indices = iter(range(len(items)))
    taking = threading.Lock()
    failures: list[BaseException] = []

    def worker() -> None:
        while not failures:
            with taking:
                index = next(indices, None)
            if index is None:
                return
            try:
                answers[index] = caught(items[index])
            except BaseException as exc:  # a bug: raised again by the caller's thread
                failures.append(exc)
                return

    threads = [threading.Thread(target=worker, name=f"gitgate-apply_{n}", daemon=True)
               for n in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return answers  # type: ignore[return-value]  # every index was answered
