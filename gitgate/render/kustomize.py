"""Run `kustomize build` (or `kubectl kustomize`) safely: root-only loading, no plugins,
no helm, no network, a timeout, stderr kept for the error."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from gitgate.errors import RenderError
from gitgate.yamlio import YamlSyntaxError, load_documents

DEFAULT_TIMEOUT_S = 120.0


def _sandbox_env(home: str) -> dict[str, str]:
    """An environment with no credentials and no usable proxy, so nothing reaches the network."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    dead = "http://127.0.0.1:9"
    return {**keep, "HOME": home, "XDG_CONFIG_HOME": home, "KUSTOMIZE_PLUGIN_HOME": home,
            "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
            "NO_PROXY": "", "GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": "file"}


def kustomize_build(argv: tuple[str, ...], folder: Path, *, display: str,
                    timeout: float = DEFAULT_TIMEOUT_S) -> list[object]:
    """Build `folder` and return its documents. `display` is the repo-relative name for errors."""
    command = [*argv, str(folder), "--load-restrictor", "LoadRestrictionsRootOnly"]
    with tempfile.TemporaryDirectory(prefix="gitgate-kustomize-") as home:
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  env=_sandbox_env(home), stdin=subprocess.DEVNULL, cwd=folder)
        except subprocess.TimeoutExpired:
            raise RenderError(f"kustomize build of {display} took longer than {timeout:.0f}s",
                              file=display) from None
    if proc.returncode != 0:
        message = proc.stderr.strip().replace(str(folder), display) or "kustomize failed"
        raise RenderError(f"kustomize build {display} failed: {message}", file=display)
    try:
        return [doc.data for doc in load_documents(proc.stdout)]
    except YamlSyntaxError as exc:
        raise RenderError(f"kustomize output of {display} is not YAML: {exc}",
                          file=display) from None
