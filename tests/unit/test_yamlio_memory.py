"""The YAML reader a thread keeps for the life of `gitgate run` keeps nothing per document."""

import gc
import tracemalloc

from gitgate.yamlio import load_documents

STREAM = "a: 1\n---\nb: [x, y]\n---\nc: {d: e}\n"


def _ruamel_blocks(snapshot: tracemalloc.Snapshot) -> int:
    kept = snapshot.filter_traces([tracemalloc.Filter(True, "*ruamel*")])
    return sum(stat.count for stat in kept.statistics("filename"))


def test_reading_many_streams_retains_nothing_in_the_reader() -> None:
    for _ in range(20):  # the reader and its caches exist before the count starts
        list(load_documents(STREAM))
    tracemalloc.start()
    try:
        for _ in range(50):
            list(load_documents(STREAM))
        gc.collect()  # each read makes a loader class: garbage with cycles, not kept
        before = _ruamel_blocks(tracemalloc.take_snapshot())
        for _ in range(500):
            assert [d.data for d in load_documents(STREAM)][1] == {"b": ["x", "y"]}
        gc.collect()
        after = _ruamel_blocks(tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    # what the last read leaves until the next is a few hundred blocks; before the fix each
    # stream left 4 records with a list each behind: 4,000 more blocks here
    assert after - before < 1000
