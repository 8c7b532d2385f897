"""The records as the requests watcher sees them (`apply.recordwatch`): plain data in,
the list a pass would otherwise ask for out, or None when the watch cannot stand for it."""

from __future__ import annotations

from gitgate.apply.recordwatch import WatchedRecords


def _meta(name: str, version: str, uid: str = "") -> dict:
    return {"metadata": {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": version}}


def _names(listed: list[dict] | None) -> list[tuple[str, str]] | None:
    if listed is None:
        return None
    return [(i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in listed]


def test_nothing_is_given_before_the_watch_listed():
    assert WatchedRecords().at_least("1") is None


def test_the_list_and_each_event_after_it_stand_for_a_list_at_the_version_reached():
    view = WatchedRecords()
    view.listed([_meta("b", "7"), _meta("a", "5")], "10")
    assert _names(view.at_least("10")) == [("a", "5"), ("b", "7")]  # sorted by name
    assert view.at_least("11") is None  # not reached yet: the pass lists
    view.sent("MODIFIED", _meta("a", "11"))
    view.sent("ADDED", _meta("c", "12"))
    view.sent("DELETED", _meta("b", "13"))
    assert _names(view.at_least("13")) == [("a", "11"), ("c", "12")]
    assert view.at_least("14") is None
    view.sent("BOOKMARK", {"metadata": {"resourceVersion": "20"}})  # nothing changed up to 20
    assert _names(view.at_least("20")) == [("a", "11"), ("c", "12")]
    assert view.at_least("3")[0]["metadata"]["uid"] == "uid-a"


def test_a_record_made_anew_under_its_name_carries_its_new_uid():
    view = WatchedRecords()
    view.listed([_meta("a", "5", uid="first")], "5")
    view.sent("DELETED", _meta("a", "6", uid="first"))
    view.sent("ADDED", _meta("a", "7", uid="second"))
    assert view.at_least("7") == [_meta("a", "7", uid="second")]


def test_a_lost_watch_gives_nothing_until_it_lists_again():
    view = WatchedRecords()
    view.listed([_meta("a", "5")], "5")
    view.lost()
    view.sent("MODIFIED", _meta("a", "9"))  # an event after the loss is not a list
    assert view.at_least("1") is None
    view.listed([_meta("a", "9")], "9")
    assert _names(view.at_least("9")) == [("a", "9")]


def test_versions_that_are_not_etcds_turn_the_view_off():
    view = WatchedRecords()
    view.listed([_meta("a", "5")], "v5")
    assert view.at_least("1") is None
    view.listed([_meta("a", "5")], "5")
    assert view.at_least("x") is None  # asked for a version it cannot compare
    view.sent("MODIFIED", _meta("a", "opaque"))
    assert view.at_least("1") is None
