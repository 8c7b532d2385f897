"""How a rendering tool's death is told: the exact lines Go's runtime prints at a memory cap
(each was seen from helm under RLIMIT_DATA here, which one depending on which allocation the
cap refused first), a crash of another kind, a kill, and a tool's own error."""

from __future__ import annotations

import signal

import pytest

from gitgate.render.tool_exit import failure_message

GOROUTINES = b"\nruntime stack:\nruntime.throw({0x2a1b3c4, 0x16})\n\t/usr/local/go/src/..."


def told(returncode: int, stderr: bytes, stopped_by_gitgate: bool = False) -> str | None:
    return failure_message(tool="helm", display="app", returncode=returncode, stderr=stderr,
                           max_memory=256 << 20, stopped_by_gitgate=stopped_by_gitgate)


@pytest.mark.parametrize("line", [
    b"fatal error: runtime: out of memory",
    b"fatal error: out of memory allocating heap arena metadata",
    b"fatal error: out of memory allocating heap arena map",
    b"fatal error: runtime: cannot allocate memory",
    b"fatal error: out of memory (stackalloc)",
    b"fatal error: failed to reserve page summary memory",
])
def test_every_line_go_prints_at_the_memory_cap_is_the_memory_cap(line):
    message = told(2, line + GOROUTINES)
    assert message is not None
    assert message.startswith("helm ran out of its 256 MiB of memory rendering app")
    assert line.decode() in message and "GITGATE_RENDER_MAX_MEMORY raises" in message


def test_the_runtime_s_own_line_before_the_fatal_one_counts_too():
    stderr = (b"runtime: mmap(0xc000400000, 67108864) returned 0x0, 12\n"
              b"fatal error: runtime: cannot map pages in arena address space" + GOROUTINES)
    assert "ran out of its 256 MiB" in (told(2, stderr) or "")


def test_a_runtime_crash_of_another_kind_is_a_crash_naming_its_line_and_the_cap():
    stderr = (b"runtime: failed to create new OS thread (have 7 already; errno=11)\n"
              b"fatal error: newosproc" + GOROUTINES)
    message = told(2, stderr) or ""
    assert message.startswith("helm crashed rendering app (fatal error: newosproc)")
    assert "256 MiB" in message and "GITGATE_RENDER_MAX_MEMORY" in message
    assert "ran out of" not in message


@pytest.mark.parametrize("stderr", [
    b"Error: execution error at (c/templates/cm.yaml:1:4): out of memory",
    b"Error: execution error at (c/templates/cm.yaml:1:4): spoof\nfatal error: out of memory",
    b"Error: Chart.yaml file is missing",
])
def test_a_tool_s_own_error_is_never_read_as_a_crash_whatever_its_text(stderr):
    """helm reports its errors (and a template's `fail`) with status 1: the caller shows them
    as the chart's error, with their file and line."""
    assert told(1, stderr) is None


def test_a_clean_exit_and_a_status_two_without_the_runtime_s_line_are_not_crashes():
    assert told(0, b"") is None
    assert told(2, b"Error: unknown flag: --bogus") is None


def test_a_kill_by_gitgate_says_it_is_shutting_down():
    assert told(-signal.SIGKILL, b"", stopped_by_gitgate=True) == \
        "helm was stopped rendering app (gitgate is shutting down)"


@pytest.mark.parametrize("number, name", [(signal.SIGKILL, "SIGKILL"),
                                          (signal.SIGSEGV, "SIGSEGV"), (77, "signal 77")])
def test_a_kill_from_outside_names_the_signal_and_the_likely_killer(number, name):
    message = told(-number, b"") or ""
    assert message.startswith(f"helm was killed by {name} rendering app, and not by gitgate")
    assert "out-of-memory killer" in message and "GITGATE_RENDER_MAX_MEMORY" in message
