"""Run a rendering tool (helm, kustomize) as an untrusted program: an environment without
credentials, plugins or a usable proxy, its own process group, a time limit, caps on its
output and its memory, and a way to stop every running one at once (SIGTERM of any
gitgate command)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gitgate.errors import RenderError
from gitgate.render.tool_exit import failure_message

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_OUTPUT = 64 << 20  # bytes of stdout one render may produce
# heap one tool process may map (RLIMIT_DATA: Go's heap counts, its address-space reservations
# do not, so a normal render is unaffected and a runaway template dies at the limit)
DEFAULT_MAX_MEMORY = 512 << 20

_running: set[subprocess.Popen[bytes]] = set()
_stopped: set[subprocess.Popen[bytes]] = set()  # killed by stop_all: gitgate is shutting down
_running_lock = threading.Lock()


@dataclass(frozen=True)
class Limits:
    timeout: float = DEFAULT_TIMEOUT_S  # GITGATE_RENDER_TIMEOUT (seconds)
    max_output: int = DEFAULT_MAX_OUTPUT  # GITGATE_RENDER_MAX_OUTPUT (bytes)
    max_memory: int = DEFAULT_MAX_MEMORY  # GITGATE_RENDER_MAX_MEMORY (bytes of heap)

    @classmethod
    def from_env(cls) -> Limits:
        timeout = os.environ.get("GITGATE_RENDER_TIMEOUT", "")
        output = os.environ.get("GITGATE_RENDER_MAX_OUTPUT", "")
        memory = os.environ.get("GITGATE_RENDER_MAX_MEMORY", "")
        return cls(float(timeout) if timeout.replace(".", "", 1).isdigit() else cls.timeout,
                   int(output) if output.isdigit() else cls.max_output,
                   int(memory) if memory.isdigit() else cls.max_memory)


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: str


def go_runtime_env(max_memory: int) -> dict[str, str]:
    """How a short-lived Go tool (helm, kustomize) spends its CPU: no garbage collection until
    its heap reaches a quarter of its memory cap. A render frees little worth collecting before
    it exits, so the collector's work was most of the waste: a fifth less CPU per render, and
    no more memory for a normal render (measured in bench/results/history.md). A template that keeps
    allocating is still collected from there on, and still dies at the cap."""
    return {"GOGC": "off", "GOMEMLIMIT": str(max_memory // 4)}


def sandbox_env(home: str, max_memory: int) -> dict[str, str]:
    """No credentials, no plugins, no cache or config of the user, no usable proxy: a tool
    that tries to reach the network fails instead. Go's settings are gitgate's
    (`go_runtime_env`), never the caller's."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    dead = "http://127.0.0.1:9"
    return {**keep, **go_runtime_env(max_memory),
            "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home,
            "XDG_DATA_HOME": home, "KUSTOMIZE_PLUGIN_HOME": home,
            "HELM_PLUGINS": str(Path(home) / "no-plugins"),
            "HELM_CONFIG_HOME": home, "HELM_CACHE_HOME": home, "HELM_DATA_HOME": home,
            "HELM_REGISTRY_CONFIG": str(Path(home) / "registry.json"),
            "HELM_REPOSITORY_CONFIG": str(Path(home) / "repositories.yaml"),
            "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
            "NO_PROXY": "", "no_proxy": "", "GIT_TERMINAL_PROMPT": "0",
            "GIT_ALLOW_PROTOCOL": "file"}


def run_tool(argv: list[str], *, cwd: Path, display: str, tool: str,
             stdin: bytes | None = None, limits: Limits | None = None) -> Finished:
    """Run `argv` sandboxed; a RenderError naming `display` when it runs too long or writes
    too much (the process group is killed either way)."""
    limits = limits or Limits.from_env()
    with tempfile.TemporaryDirectory(prefix=f"gitgate-{tool}-") as home:
        process = subprocess.Popen(
            argv, cwd=cwd, env=sandbox_env(home, limits.max_memory),
            start_new_session=True,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with _running_lock:
            _running.add(process)
        try:
            _limit_memory(process, limits.max_memory)
            return _collect(process, stdin, limits, display, tool)
        finally:
            with _running_lock:
                _running.discard(process)
                _stopped.discard(process)
            _kill(process)


def _collect(process: subprocess.Popen[bytes], stdin: bytes | None, limits: Limits, display: str,
             tool: str) -> Finished:
    chunks: list[bytes] = []
    errors: list[bytes] = []
    too_much = threading.Event()

    def read_stdout() -> None:
        size = 0
        assert process.stdout is not None
        while block := process.stdout.read(1 << 16):
            size += len(block)
            if size > limits.max_output:
                too_much.set()
                _kill(process)
                return
            chunks.append(block)

    def read_stderr() -> None:
        assert process.stderr is not None
        while block := process.stderr.read(1 << 16):
            if sum(map(len, errors)) < 1 << 16:
                errors.append(block)

    readers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=read_stderr, daemon=True)]
    for reader in readers:
        reader.start()
    if stdin is not None and process.stdin is not None:
        with contextlib.suppress(BrokenPipeError, OSError):
            process.stdin.write(stdin)
            process.stdin.close()
    deadline = time.monotonic() + limits.timeout
    # the end of the tool's output, then its exit: a thread join and a lock wait wake at once,
    # where Popen.wait(timeout) polls with sleeps of up to 50 ms (most of a small render)
    readers[0].join(limits.timeout)
    try:
        if readers[0].is_alive():
            raise subprocess.TimeoutExpired(process.args, limits.timeout)
        process.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(process)
        raise RenderError(f"{tool} took longer than {limits.timeout:g}s rendering {display} "
                          "and was stopped (GITGATE_RENDER_TIMEOUT raises the limit)",
                          file=display) from None
    for reader in readers:
        reader.join(5)
    if too_much.is_set():
        raise RenderError(f"{tool} wrote more than {limits.max_output} bytes rendering "
                          f"{display} and was stopped (GITGATE_RENDER_MAX_OUTPUT raises the "
                          "limit)", file=display)
    stderr = b"".join(errors)
    with _running_lock:
        stopped_by_gitgate = process in _stopped
    died = failure_message(tool=tool, display=display, returncode=process.returncode or 0,
                           stderr=stderr, max_memory=limits.max_memory,
                           stopped_by_gitgate=stopped_by_gitgate)
    if died is not None:
        raise RenderError(died, file=display)
    return Finished(process.returncode or 0, b"".join(chunks),
                    stderr.decode("utf-8", "replace"))


def _limit_memory(process: subprocess.Popen[bytes], limit: int) -> None:
    """RLIMIT_DATA on the tool, set from here right after it started (a preexec hook is not
    safe in a threaded process); limits survive its exec."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError, ValueError):
        resource.prlimit(process.pid, resource.RLIMIT_DATA, (limit, limit))


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def stop_all() -> None:
    """Kill every running render (a shutting-down loop must not wait for a hung tool)."""
    with _running_lock:
        running = list(_running)
        _stopped.update(running)
    for process in running:
        _kill(process)
