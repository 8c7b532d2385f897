"""The apply fan-out (`apiserver.fanout`) over plain callables: answers in the order the work was
given whatever order it finished in, never more than `workers` at once, a GitgateError kept
in its item's place, any other exception raised to the caller. No sleeps: the order of
completion is forced with events and barriers (their timeouts only end a failing test)."""

from __future__ import annotations

import threading

import pytest

from gitgate.apiserver.fanout import fan_out
from gitgate.errors import GitgateError

WAIT = 30.0  # only a broken fan-out waits this long


def test_answers_come_back_in_the_order_given_though_the_last_finished_first():
    last_done = threading.Event()
    finished: list[int] = []

    def work(item: int) -> int:
        if item == 0:
            assert last_done.wait(WAIT), "item 0 was never run beside item 4"
        finished.append(item)
        if item == 4:
            last_done.set()
        return item * 10

    assert fan_out(work, list(range(5)), workers=5) == [0, 10, 20, 30, 40]
    assert finished.index(4) < finished.index(0)


def test_never_more_than_workers_at_once_and_that_many_do_run_together():
    together = threading.Barrier(3, timeout=WAIT)
    lock = threading.Lock()
    running, most = 0, 0

    def work(item: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        together.wait()  # three at a time, or the barrier breaks
        with lock:
            running -= 1
        return item

    assert fan_out(work, list(range(9)), workers=3) == list(range(9))
    assert most == 3


def test_a_gitgate_error_stays_in_its_place_and_the_rest_go_on():
    def work(item: str) -> str:
        if item == "b":
            raise GitgateError("b refused")
        return item.upper()

    answers = fan_out(work, ["a", "b", "c", "d"], workers=2)
    assert answers[0] == "A" and answers[2:] == ["C", "D"]
    assert isinstance(answers[1], GitgateError) and answers[1].message == "b refused"


def test_any_other_exception_is_a_bug_and_reaches_the_caller():
    def work(item: int) -> int:
        if item == 2:
            raise ValueError("bug")
        return item

    with pytest.raises(ValueError, match="bug"):
        fan_out(work, list(range(6)), workers=3)


@pytest.mark.parametrize(("workers", "items"), [(1, [1, 2, 3]), (8, [1])])
def test_one_worker_or_one_item_runs_in_the_callers_thread(workers, items):
    names = fan_out(lambda _: threading.current_thread().name, items, workers)
    assert names == [threading.current_thread().name] * len(items)


def test_no_items_no_answers():
    assert fan_out(lambda item: item, [], workers=4) == []
