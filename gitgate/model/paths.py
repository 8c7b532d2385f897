"""Repo-relative POSIX paths: '.' is the repo root."""

from __future__ import annotations

import posixpath


def parent_dir(path: str) -> str:
    parent = posixpath.dirname(path)
    return parent or "."


def join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def is_under(path: str, folder: str) -> bool:
    return folder == "." or path == folder or path.startswith(folder + "/")
