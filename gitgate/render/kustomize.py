"""Run `kustomize build` (or `kubectl kustomize`) safely: root-only loading, no plugins,
no helm, no network, a time and output limit (render.sandbox), stderr kept for the error."""

from __future__ import annotations

from pathlib import Path

from gitgate.errors import RenderError
from gitgate.render.sandbox import Limits, run_tool
from gitgate.yamlio import YamlLimits, YamlSyntaxError, load_documents


def kustomize_build(argv: tuple[str, ...], folder: Path, *, display: str,
                    limits: Limits | None = None) -> list[object]:
    """Build `folder` and return its documents. `display` is the repo-relative name for errors."""
    limits = limits or Limits.from_env()
    command = [*argv, str(folder), "--load-restrictor", "LoadRestrictionsRootOnly"]
    done = run_tool(command, cwd=folder, display=display, tool="kustomize", limits=limits)
    if done.returncode != 0:
        message = done.stderr.strip().replace(str(folder), display) or "kustomize failed"
        raise RenderError(f"kustomize build {display} failed: {message}", file=display)
    try:
        text = done.stdout.decode("utf-8")
        return [doc.data for doc in load_documents(
            text, limits=YamlLimits.from_env(max_bytes=limits.max_output))]
    except UnicodeDecodeError:
        raise RenderError(f"kustomize output of {display} is not UTF-8", file=display) from None
    except YamlSyntaxError as exc:
        raise RenderError(f"kustomize output of {display} is not YAML: {exc}",
                          file=display) from None
