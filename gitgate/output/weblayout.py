"""What every page of the read-only web page shares: the snapshot it shows, the overview's
filters, escaping, times, verdict badges, the frame around each page, the sign-in and
not-found pages, and the commands that lift a hold. Every value that reaches a page is
escaped with `e`."""

from __future__ import annotations

import fnmatch
import html
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from gitgate.apply.inventory import Inventory
from gitgate.karmada.dispatch import Dispatch
from gitgate.model import Verdict
from gitgate.output.tables import parse_stamp
from gitgate.timespec import age, rfc3339

ICON_LINK = '<link rel="icon" href="/favicon.ico" type="image/svg+xml">'
VERDICTS = (Verdict.APPLY, Verdict.HELD, Verdict.SUSPENDED, Verdict.HALTED, Verdict.FAILED)


@dataclass(frozen=True)
class Snapshot:
    """What one page shows, read at one moment."""

    now: datetime
    inventories: tuple[Inventory, ...]
    dispatch: Mapping[str, Dispatch]
    overview: Mapping[str, Any]  # status.overview's document ({} when none is known)
    origin: str  # where the state comes from: the repo the loop follows, or the API server
    revision: str | None = None  # the loop's last reconciled revision (None: not known here)
    problems: tuple[str, ...] = ()  # the loop's last error, an unreadable Karmada, provenance
    refresh_seconds: int = 5
    verdicts: Mapping[str, str] = field(default_factory=dict)  # a failed pass's bundles

    def verdict(self, inv: Inventory) -> str:
        return self.verdicts.get(inv.bundle) or inv.verdict or "-"


@dataclass(frozen=True)
class Filters:
    """The overview's filters, from its query string."""

    name: str = ""
    label: str = ""
    verdict: str = ""

    @classmethod
    def of(cls, query: Mapping[str, Sequence[str]]) -> Filters:
        def one(key: str) -> str:
            values = query.get(key) or [""]
            return values[0].strip()[:200]
        return cls(one("name"), one("label"), one("verdict"))

    def keep(self, inv: Inventory, verdict: str) -> bool:
        if self.verdict and verdict != self.verdict:
            return False
        if self.name:
            pattern = self.name if any(c in self.name for c in "*?[") else f"*{self.name}*"
            if not fnmatch.fnmatchcase(inv.bundle, pattern):
                return False
        if self.label:
            key, sep, value = self.label.partition("=")
            labels = dict(inv.labels)
            if key.strip() not in labels or (sep and labels[key.strip()] != value.strip()):
                return False
        return True


def e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def bundle_href(name: str) -> str:
    return "/ui/bundles/" + quote(name, safe="/")


def time_tag(text: str | None, now: datetime) -> str:
    """`3m ago` / `in 5m`, with the time itself on hover."""
    moment = parse_stamp(text) if text else None
    if moment is None:
        return "-"
    ago = age(moment, now)
    shown = ago if ago.startswith("in ") else f"{ago} ago"
    return f'<time datetime="{e(rfc3339(moment))}" title="{e(rfc3339(moment))}">{e(shown)}</time>'


def badge(verdict: str) -> str:
    return f'<span class="badge v-{e(verdict)}" data-verdict="{e(verdict)}">{e(verdict)}</span>'


def layout(title: str, body: str, snap: Snapshot, active: str) -> str:
    tabs = "".join(
        f'<a href="{href}"{" aria-current=page" if key == active else ""}>{label}</a>'
        for key, href, label in (("overview", "/ui/", "Overview"), ("gates", "/ui/gates", "Gates"),
                                 ("rollouts", "/ui/rollouts", "Rollouts")))
    problems = "".join(f'<p class="alert" role="alert">{e(p)}</p>' for p in snap.problems)
    revision = f"revision {e((snap.revision or '-')[:12])} · " if snap.revision is not None else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{e(title)} · gitgate</title><link rel="stylesheet" href="/ui/app.css">'
        f'{ICON_LINK}<script src="/ui/app.js" defer></script></head>'
        f'<body data-refresh="{snap.refresh_seconds}"><header><strong>gitgate</strong>'
        f'<nav>{tabs}</nav><span id="live" class="live" aria-live="polite"></span></header>'
        f'<main id="main"><h1>{e(title)}</h1>{problems}{body}</main>'
        f'<footer id="footer">{revision}{e(snap.origin)} · read '
        f'<time datetime="{e(rfc3339(snap.now))}">{e(rfc3339(snap.now))}</time></footer>'
        '</body></html>')


def missing_page(snap: Snapshot, name: str, what: str = "bundle") -> str:
    said = (f"No bundle named <code>{e(name)}</code> is recorded." if what == "bundle"
            else f"There is no page <code>{e(name)}</code>.")
    return layout("Not found", f'<p>{said} <a href="/ui/">All bundles</a></p>', snap, "")


def lift_gate(gate: str) -> str:
    """The command that lifts a gate, run in a checkout of the repo."""
    return f"gitgate resume {shlex.quote(gate)} --push"


def retry_halt(bundle: str) -> str:
    """The command that asks a halted rollout to try its wave again."""
    return f"gitgate resume {shlex.quote(bundle)} --kubeconfig KARMADA_KUBECONFIG"


def login_page(said: str = "") -> str:
    """The sign-in form (the page's token, `--ui-token-file`)."""
    alert = f'<p class="alert" role="alert">{e(said)}</p>' if said else ""
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>Sign in · gitgate</title><link rel="stylesheet" href="/ui/app.css">'
            f'{ICON_LINK}</head><body><header><strong>gitgate</strong></header><main>'
            '<h1>Sign in</h1>'
            f'{alert}<p>This page is protected by the token gitgate was started with '
            '(<code>--ui-token-file</code>).</p><form class="login" method="post" '
            'action="/ui/login"><label>Token <input type="password" name="token" '
            'autocomplete="current-password" required></label>'
            '<button type="submit">Sign in</button></form></main></body></html>')
