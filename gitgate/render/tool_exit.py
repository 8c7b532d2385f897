"""Why a rendering tool (helm, kustomize: both Go programs) died, read from how it ended: its
exit status and the first lines of its stderr. Pure: each wording is tested with the exact
lines Go's runtime prints.

A Go program stopped by its runtime exits with status 2 and a `fatal error: ...` line. Which
line a runaway template gets at the memory cap depends on which allocation the cap refuses
first: the heap (`runtime: out of memory`), the heap's metadata (`out of memory allocating
heap arena metadata`), or a mapping the kernel refuses with ENOMEM (`runtime: cannot allocate
memory`). All of them are the memory cap, and all are said so. A tool's own error (a template
that calls `fail`, a missing file) exits with status 1 and is the chart's error, never read as
a crash, whatever its text says."""

from __future__ import annotations

import signal

GO_RUNTIME_EXIT = 2
# what Go's runtime says when a mapping or an allocation is refused (ENOMEM is errno 12)
_MEMORY_WORDS = ("out of memory", "cannot allocate memory", "errno=12",
                 "failed to reserve page summary memory", "cannot map pages")


def runtime_said(returncode: int, stderr: bytes) -> list[str]:
    """The Go runtime's own lines (`fatal error: ...`, `runtime: ...`) when the tool was
    stopped by its runtime; none otherwise."""
    if returncode != GO_RUNTIME_EXIT:
        return []
    lines = stderr.decode("utf-8", "replace").splitlines()
    return [line.strip() for line in lines if line.startswith(("fatal error: ", "runtime: "))]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def failure_message(*, tool: str, display: str, returncode: int, stderr: bytes,
                    max_memory: int, stopped_by_gitgate: bool) -> str | None:
    """What to tell the user when the tool died rather than failed; None when it exited with
    an error of its own (the caller reports its stderr) or did not fail."""
    cap = f"{max_memory >> 20} MiB"
    if returncode < 0:
        if stopped_by_gitgate:
            return f"{tool} was stopped rendering {display} (gitgate is shutting down)"
        return (f"{tool} was killed by {_signal_name(-returncode)} rendering {display}, and "
                "not by gitgate: the kernel's out-of-memory killer ends a process this way "
                "when the machine runs short of memory (GITGATE_RENDER_MAX_MEMORY, now "
                f"{cap}, caps what one render may take)")
    said = runtime_said(returncode, stderr)
    line = next((line for line in said if line.startswith("fatal error: ")), None)
    if line is None:
        return None
    if any(word in text for text in said for word in _MEMORY_WORDS):
        return (f"{tool} ran out of its {cap} of memory rendering {display} and was stopped "
                f"({line}; GITGATE_RENDER_MAX_MEMORY raises the limit)")
    return (f"{tool} crashed rendering {display} ({line}): its Go runtime stopped it, which "
            f"a runaway template or too small a memory cap ({cap}, "
            "GITGATE_RENDER_MAX_MEMORY) can cause")
