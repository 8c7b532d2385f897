"""The web page's sign-in pieces (`endpoints.signin`): the token file read again on change,
session cookies that expire and belong to one token, wrong tokens counted per address."""

from __future__ import annotations

import os

from gitgate.endpoints.signin import Sessions, Throttle, TokenFile


def test_the_token_file_is_read_again_when_it_changes(tmp_path):
    path = tmp_path / "token"
    path.write_text("first-token\n")
    token = TokenFile(path)
    assert token.current() == b"first-token"
    path.write_text("secnd-token\n")  # same size, same inode
    os.utime(path, ns=(1, 1))  # a new modification time
    assert token.current() == b"secnd-token"
    path.write_text("")
    assert token.current() is None  # empty: no token, nobody gets in
    path.unlink()
    assert token.current() is None


def test_a_cookie_is_new_at_every_sign_in_expires_and_belongs_to_its_token():
    now = [1_000_000.0]
    sessions = Sessions(max_age=60, clock=lambda: now[0])
    one, two = sessions.issue(b"token"), sessions.issue(b"token")
    assert one != two and b"token" not in one.encode()
    assert sessions.valid(one, b"token") and sessions.valid(two, b"token")
    assert not sessions.valid(one, b"another-token")
    assert not sessions.valid(("x" if one[0] != "x" else "y") + one[1:], b"token")  # forged
    now[0] += 61
    assert not sessions.valid(one, b"token")
    now[0] -= 200  # issued in the future: refused too
    assert not sessions.valid(two, b"token")


def test_wrong_tokens_are_counted_per_address_and_minute():
    now = [0.0]
    throttle = Throttle(per_minute=2, clock=lambda: now[0], max_addresses=3)
    assert [throttle.failed("a") for _ in range(3)] == [False, False, True]
    assert throttle.failed("b") is False  # another address: its own count
    now[0] = 60.0
    assert throttle.failed("a") is False  # a new minute
    for address in ("c", "d", "e"):  # more addresses than it keeps: the oldest go first
        throttle.failed(address)
    assert len(throttle._wrong) <= 3
