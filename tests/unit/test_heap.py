"""What threads freed is given back to the system, not kept resident (glibc)."""

import threading

import pytest

from gitgate import heap


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 1e6


@pytest.fixture
def glibc():
    if heap._glibc() is None:
        pytest.skip("malloc_trim is glibc's: this C library keeps or returns memory its way")


def test_memory_a_thread_freed_is_given_back(glibc) -> None:
    kept: list[bytes] = []

    def decode_and_drop() -> None:  # an answer's worth of large blocks, a tenth kept
        blocks = [bytes(2000) + str(i).encode() for i in range(100_000)]
        kept.extend(blocks[::10])
        blocks.clear()

    worker = threading.Thread(target=decode_and_drop)
    worker.start()
    worker.join()
    before = _resident_mb()
    assert heap.give_back() is True
    assert before - _resident_mb() > 100  # 180 MB freed among 20 MB kept
    assert len(kept) == 10_000


def test_the_arenas_can_be_capped(glibc) -> None:
    assert heap.limit_arenas(2) is True
