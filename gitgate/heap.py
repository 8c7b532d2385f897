"""Memory the process freed, given back to the operating system (glibc). Edge module.

CPython hands every block above 512 bytes (an answer's bytes, a list's array, a large dict)
to the C allocator. glibc keeps what is freed in the arena of the thread that freed it and
returns it to the system only when asked, so a `gitgate run` whose threads decode lists and
send writes grows its resident memory pass after pass, above what it holds: at 2,000
bundles a replica held 70 MB of objects and 270 MB resident. `limit_arenas` caps the
arenas before threads start (what `MALLOC_ARENA_MAX` does from the environment); `give_back`
returns the free pages of every arena (`malloc_trim`), after each pass and each read of
Karmada. Elsewhere (musl, macOS) both do nothing and say so."""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any

M_ARENA_MAX = -8  # mallopt's parameter, from glibc's malloc.h


@functools.cache
def _glibc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the C library the interpreter runs on
    except OSError:
        return None
    if not (hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt")):
        return None  # not glibc
    return libc


def limit_arenas(count: int = 2) -> bool:
    """At most `count` malloc arenas for the threads started from now on (True when set)."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, count))


def give_back() -> bool:
    """Return freed memory to the system (True when the C library was asked)."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
