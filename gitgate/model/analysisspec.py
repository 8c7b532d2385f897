"""A rollout's analysis, as `bundle.yaml` (or the `gitgate.yaml` defaults) declares it:
checks that query a Prometheus the platform lists in `gitgate.yaml` (`analysis.providers`)
and must hold on every released cluster for a wave to count as healthy."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, "<": operator.lt}
PLACEHOLDERS = ("cluster", "bundle", "revision")


@dataclass(frozen=True)
class Provider:
    """A Prometheus gitgate may query (`gitgate.yaml` `analysis.providers`). Credentials and
    the CA are named, never held: files on gitgate's host."""

    url: str  # http(s)://host[:port][/path], without user, query or fragment
    name: str = ""
    token_file: str | None = None  # a bearer token, sent with each query
    ca_file: str | None = None
    tenants: tuple[str, ...] | None = None  # None: every source may use it

    @property
    def label(self) -> str:
        return self.name or self.url

    def allows(self, tenant: str) -> bool:
        return self.tenants is None or tenant in self.tenants


@dataclass(frozen=True)
class FailIf:
    """`failIf: "> 0.05"`: a sample that compares so fails the check."""

    op: str  # one of COMPARISONS
    threshold: float

    def fails(self, value: float) -> bool:
        """NaN fails: a ratio over no traffic says nothing good."""
        return math.isnan(value) or COMPARISONS[self.op](value, self.threshold)

    def text(self) -> str:
        return f"{self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Check:
    """One `rollout.analysis` entry, its provider resolved from `gitgate.yaml`."""

    name: str
    provider: Provider
    query: str  # PromQL; {{cluster}}, {{bundle}}, {{revision}} inside string literals
    fail_if: FailIf
    interval: timedelta = timedelta(seconds=30)
    failure_limit: int = 0  # failed measurements tolerated; one more fails the check

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "provider": self.provider.label, "query": self.query,
                "failIf": self.fail_if.text(),
                "interval": f"{int(self.interval.total_seconds())}s",
                "failureLimit": self.failure_limit}
