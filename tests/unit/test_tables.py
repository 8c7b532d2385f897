"""Tables read like kubectl's: AGE columns, times to the second, one line per row (cut with an
ellipsis; -o wide carries the full text)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gitgate.apply.inventory import Inventory
from gitgate.output.statusviews import status_table
from gitgate.output.tables import one_line
from gitgate.status.bundlestate import bundle_states
from gitgate.timespec import age, rfc3339

NOW = datetime(2026, 11, 22, 18, 0, tzinfo=UTC)


def test_age_reads_like_kubectl():
    assert [age(NOW - timedelta(seconds=s), NOW) for s in (7, 300, 7200, 3 * 86400)] == [
        "7s", "5m", "2h", "3d"]
    assert age(NOW + timedelta(minutes=5), NOW) == "in 5m"
    assert age(None, NOW) == "-"


def test_times_are_utc_to_the_second():
    moment = datetime(2026, 11, 22, 19, 0, 1, 987654, tzinfo=UTC) + timedelta(hours=0)
    assert rfc3339(moment) == "2026-11-22T19:00:01Z"
    east = moment.astimezone(datetime.now().astimezone().tzinfo)
    assert rfc3339(east) == "2026-11-22T19:00:01Z"


def test_one_line_cuts_and_flattens():
    assert one_line("a\nb   c") == "a b c"
    cut = one_line("x" * 100, 20)
    assert len(cut) == 20 and cut.endswith("…")


def test_status_table_has_age_and_wide_keeps_the_full_message():
    long = "apply ConfigMap shop/settings failed (422 Invalid): " + "detail " * 30
    inventory = Inventory("shop", verdict="failed", message=long,
                          since=rfc3339(NOW - timedelta(minutes=5)),
                          last_applied=rfc3339(NOW - timedelta(days=2)))
    lines = status_table(bundle_states([inventory], None), NOW).splitlines()
    assert lines[0].split() == ["BUNDLE", "VERDICT", "CLUSTERS", "HEALTH", "AGE", "APPLIED",
                                "REVISION", "MESSAGE"]
    assert lines[1].split()[2:6] == ["-", "-", "5m", "2d"]  # placed nowhere, no health
    assert len(lines) == 2 and long not in lines[1] and lines[1].endswith("…")
    wide = status_table(bundle_states([inventory], None), NOW, wide=True)
    assert " ".join(long.split()) in wide and "2026-11-22T17:55:00Z" in wide


def test_a_bundle_that_reaches_no_cluster_shows_none_not_a_dash():
    """Issue 28, item 2: `status` said `CLUSTERS -` for a bundle with objects to propagate
    that reached no member cluster, as for a Namespace-only bundle that has none."""
    from gitgate.karmada.dispatch import Dispatch

    lonely, namespaces = Inventory("shop", verdict="apply"), Inventory("ns", verdict="apply")
    seen = {"shop": Dispatch((), "ConfigMap shop/a has no ResourceBinding", 2),
            "ns": Dispatch((), "", 0)}
    rows = {line.split()[0]: line.split() for line in
            status_table(bundle_states([lonely, namespaces], seen), NOW).splitlines()[1:]}
    assert rows["shop"][2] == "none" and rows["ns"][2] == "-"
