"""Errors that carry a reason and a location a user can act on."""

from __future__ import annotations


class GitgateError(Exception):
    """Base class: `reason` is a short CamelCase word, the message names file or object."""

    reason = "Error"

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line


class ConfigError(GitgateError):
    reason = "InvalidConfig"


class SourceError(GitgateError):
    reason = "SourceFailed"


class RenderError(GitgateError):
    reason = "RenderFailed"


class ToolMissing(GitgateError):
    reason = "ToolMissing"


class GateError(GitgateError):
    reason = "InvalidGate"


class GitOpError(GitgateError):
    reason = "GitFailed"
