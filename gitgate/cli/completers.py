"""Shell completion of bundle and gate names (argcomplete completers).

They read the repo the command line names (`path`, `--repo`, else the current folder) the
quick way: discovery and the gate files, no rendering (a Tab must not wait for helm). So a
split source's apps complete as the source's name; type `shop/` and finish by hand. Nothing is
printed on failure: a completion that cannot read the repo offers nothing."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gitgate.errors import GitgateError
from gitgate.gate.spec import parse_gates
from gitgate.source.config import REPO_CONFIG, parse_repo_config
from gitgate.source.discover import discover
from gitgate.source.tree import gate_texts, scan_repo


def _root(parsed_args: argparse.Namespace) -> Path:
    return Path(getattr(parsed_args, "path", None) or getattr(parsed_args, "repo", None) or ".")


def repo_names(root: Path, *, gates: bool) -> list[str]:
    """The bundle names of the repo's sources, and with `gates` its gate names."""
    try:
        names = [s.bundle_name for s in discover(scan_repo(root)).sources]
        if gates:
            config = parse_repo_config(scan_repo(root, (REPO_CONFIG,)).read(REPO_CONFIG))
            tree = scan_repo(root, (config.gates_path,))
            names += [g.name for g in parse_gates(gate_texts(tree, config.gates_path))[0]]
    except (GitgateError, OSError):
        return []
    return sorted(set(names))


def bundles(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    return [n for n in repo_names(_root(parsed_args), gates=False) if n.startswith(prefix)]


def bundles_and_gates(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    return [n for n in repo_names(_root(parsed_args), gates=True) if n.startswith(prefix)]
