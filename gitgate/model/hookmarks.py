"""Hooks: objects a chart or an Argo CD app marks to run around a sync rather than as part of
it. Read from `argocd.argoproj.io/hook` (PreSync, Sync, PostSync, SyncFail, Skip) or, when
that is absent, from `helm.sh/hook`, mapped the way Argo CD maps Helm's hooks:
pre-install/pre-upgrade -> PreSync, post-install/post-upgrade -> PostSync. Helm's `test`
hooks and the delete and rollback hooks (gitgate never runs a Helm uninstall or rollback) are
left out of the bundle and listed as skipped. Ordering: `argocd.argoproj.io/sync-wave`, else
`helm.sh/hook-weight`. Delete policies from either annotation. Pure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from gitgate.errors import Reason
from gitgate.model.objects import Manifest

ARGO_HOOK = "argocd.argoproj.io/hook"
ARGO_WAVE = "argocd.argoproj.io/sync-wave"
ARGO_DELETE = "argocd.argoproj.io/hook-delete-policy"
HELM_HOOK = "helm.sh/hook"
HELM_WEIGHT = "helm.sh/hook-weight"
HELM_DELETE = "helm.sh/hook-delete-policy"


class Phase(StrEnum):
    PRE_SYNC = "PreSync"
    SYNC = "Sync"
    POST_SYNC = "PostSync"
    SYNC_FAIL = "SyncFail"


PHASE_ORDER = (Phase.PRE_SYNC, Phase.SYNC, Phase.POST_SYNC)


class DeletePolicy(StrEnum):
    BEFORE_HOOK_CREATION = "BeforeHookCreation"
    HOOK_SUCCEEDED = "HookSucceeded"
    HOOK_FAILED = Reason.HOOK_FAILED.value  # Argo CD's word, the same as the reason's


_HELM_PHASES = {"pre-install": Phase.PRE_SYNC, "pre-upgrade": Phase.PRE_SYNC,
                "post-install": Phase.POST_SYNC, "post-upgrade": Phase.POST_SYNC}
_HELM_SKIPPED = {"test", "test-success", "test-failure", "pre-delete", "post-delete",
                 "pre-rollback", "post-rollback", "crd-install"}
_HELM_DELETE = {"before-hook-creation": DeletePolicy.BEFORE_HOOK_CREATION,
                "hook-succeeded": DeletePolicy.HOOK_SUCCEEDED,
                "hook-failed": DeletePolicy.HOOK_FAILED}
_ARGO_DELETE = {str(p): p for p in DeletePolicy}
_ARGO_PHASES = {str(p): p for p in Phase}


class HookError(ValueError):
    """A hook annotation gitgate cannot act on; the message names the annotation."""


@dataclass(frozen=True)
class Hook:
    """How one object runs: in a phase, by wave, deleted per its policies."""

    phase: Phase
    wave: int = 0
    delete: frozenset[DeletePolicy] = frozenset({DeletePolicy.BEFORE_HOOK_CREATION})
    annotation: str = ARGO_HOOK  # where it was declared, for messages


@dataclass(frozen=True)
class Skipped:
    """A hook left out of the bundle, and why."""

    why: str


def _annotations(obj: Manifest) -> dict[str, str]:
    raw = (obj.get("metadata") or {}).get("annotations") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _words(value: str) -> list[str]:
    return [w.strip() for w in value.split(",") if w.strip()]


def may_be_hook(obj: Manifest) -> bool:
    """A quick look: does the object carry a hook annotation at all?"""
    notes = (obj.get("metadata") or {}).get("annotations")
    return isinstance(notes, dict) and (ARGO_HOOK in notes or HELM_HOOK in notes)


def wave_of(obj: Manifest) -> int:
    """The object's sync wave (Argo CD's annotation, else Helm's hook weight); 0 without."""
    notes = _annotations(obj)
    key = ARGO_WAVE if ARGO_WAVE in notes else HELM_WEIGHT if (
        HELM_HOOK in notes and HELM_WEIGHT in notes and ARGO_HOOK not in notes) else ""
    if not key:
        return 0
    try:
        return int(notes[key].strip())
    except ValueError:
        raise HookError(f"annotation {key}: {notes[key]!r} is not a whole number; write a "
                        "wave such as \"-1\" or \"2\"") from None


def _delete(values: list[str], table: dict[str, DeletePolicy], key: str) -> frozenset[DeletePolicy]:
    unknown = [v for v in values if v not in table]
    if unknown:
        raise HookError(f"annotation {key}: unknown delete policy {unknown[0]!r}; use one of "
                        f"{', '.join(sorted(table))}")
    return frozenset(table[v] for v in values) or frozenset(
        {DeletePolicy.BEFORE_HOOK_CREATION})


def hook_of(obj: Manifest) -> Hook | Skipped | None:
    """The object's hook, `Skipped` when it is never applied, None for a plain object.
    Raises HookError naming the annotation that cannot be read."""
    notes = _annotations(obj)
    if ARGO_HOOK in notes:
        kinds = _words(notes[ARGO_HOOK])
        if "Skip" in kinds:
            return Skipped(f"{ARGO_HOOK}: Skip")
        unknown = [k for k in kinds if k not in _ARGO_PHASES]
        if unknown or not kinds:
            raise HookError(f"annotation {ARGO_HOOK}: unknown hook {(unknown or [''])[0]!r}; "
                            f"use one of {', '.join(_ARGO_PHASES)} or Skip")
        phase = min((_ARGO_PHASES[k] for k in kinds), key=list(Phase).index)
        return Hook(phase, wave_of(obj),
                    _delete(_words(notes.get(ARGO_DELETE, "")), _ARGO_DELETE, ARGO_DELETE))
    if HELM_HOOK not in notes:
        return None
    kinds = _words(notes[HELM_HOOK])
    unknown = [k for k in kinds if k not in _HELM_PHASES and k not in _HELM_SKIPPED]
    if unknown or not kinds:
        raise HookError(f"annotation {HELM_HOOK}: unknown hook {(unknown or [''])[0]!r}; use "
                        f"one of {', '.join([*_HELM_PHASES, *sorted(_HELM_SKIPPED)])}")
    phases = sorted({_HELM_PHASES[k] for k in kinds if k in _HELM_PHASES},
                    key=list(Phase).index)
    if not phases:
        return Skipped(f"{HELM_HOOK}: {notes[HELM_HOOK]} (gitgate runs no Helm test, delete or "
                       "rollback hooks)")
    return Hook(phases[0], wave_of(obj),
                _delete(_words(notes.get(HELM_DELETE, "")), _HELM_DELETE, HELM_DELETE),
                HELM_HOOK)


NAME_LIMIT = 63
SUFFIX = 8  # hex digits of the digest after a generateName prefix


def generated_name(prefix: str, digest: str, obj_hash: str) -> str:
    """What `generateName: prefix` becomes: the prefix and a short hash of the bundle's
    digest and the object, so it is the same for the same content and new for new content
    (the API server would add five random characters instead)."""
    short = hashlib.sha256(f"{digest}:{obj_hash}".encode()).hexdigest()[:SUFFIX]
    return prefix[:NAME_LIMIT - SUFFIX] + short
