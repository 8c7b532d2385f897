"""Objects whose change touches an immutable field (a Deployment's selector, a Job's template):
recreated when the object says so (`gitgate.io/recreate: allowed`), never in a suspended bundle
(deleting a template makes Karmada delete it on every member, suspended or not). And an object
written while it was being deleted (a finalizer still held it, as Karmada's does a policy a
pass before pruned): the write went to the object that goes, so it is written again once it
has gone."""

from __future__ import annotations

import time
from collections.abc import Callable

from gitgate.apiserver.changeset import Applied
from gitgate.apiserver.ports import ObjectPort
from gitgate.errors import KubeError, Reason
from gitgate.model import Manifest, ObjectRef

RECREATE_ANNOTATION = "gitgate.io/recreate"


def allows_recreate(obj: Manifest) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(RECREATE_ANNOTATION, "")).lower() == "allowed"


def refusal(obj: Manifest, fields: tuple[str, ...], suspended: bool) -> KubeError:
    ref = ObjectRef.of(obj)
    shown = ", ".join(fields)
    if suspended:
        hint = ("it is not recreated while its bundle is suspended (Karmada would delete it "
                "from every member); lift the suspension first")
    else:
        hint = (f"annotate it {RECREATE_ANNOTATION}: allowed to let gitgate delete and "
                "recreate it (its workload restarts), or change it back")
    return KubeError(f"{ref}: {shown} cannot change in place (the API server says the field is "
                     f"immutable); {hint}", status=422, reason=Reason.IMMUTABLE_FIELD,
                     immutable_fields=fields)


def recreate(cluster: ObjectPort, obj: Manifest, *, force: bool = False, timeout: float = 30.0,
             sleep: Callable[[float], None] = time.sleep,
             clock: Callable[[], float] = time.monotonic) -> Applied:
    """Delete the live object, wait until it is gone (finalizers may keep it a while), apply
    it again."""
    ref = ObjectRef.of(obj)
    cluster.delete(obj["apiVersion"], ref.kind, ref.namespace, ref.name)
    _await_gone(cluster, obj, "was deleted to be recreated", Reason.IMMUTABLE_FIELD, timeout,
                sleep, clock, replaced=False)
    return cluster.apply(obj, force=force)


def terminating(answer: Applied) -> bool:
    """The write went to an object being deleted (its finalizers hold it a while)."""
    return bool((answer.obj.get("metadata") or {}).get("deletionTimestamp"))


def after_deletion(cluster: ObjectPort, obj: Manifest, *, force: bool = False,
                   timeout: float = 30.0, sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic) -> Applied:
    """`obj` was written to an object being deleted: wait until it is gone, write it again."""
    _await_gone(cluster, obj, "was being deleted when written", Reason.APPLY_FAILED, timeout,
                sleep, clock, replaced=True)
    return cluster.apply(obj, force=force)


def _await_gone(cluster: ObjectPort, obj: Manifest, what: str, reason: Reason, timeout: float,
                sleep: Callable[[float], None], clock: Callable[[], float], *,
                replaced: bool) -> None:
    """Until the live object is gone (`replaced`: or another, not being deleted, took its
    place)."""
    ref = ObjectRef.of(obj)
    api_version, namespace = obj["apiVersion"], ref.namespace
    deadline = clock() + timeout
    while (live := cluster.get(api_version, ref.kind, namespace, ref.name)) is not None:
        if replaced and not (live.get("metadata") or {}).get("deletionTimestamp"):
            return
        if clock() >= deadline:
            finalizers = (live.get("metadata") or {}).get("finalizers") or []
            waiting = (f"finalizer(s) {', '.join(finalizers)} keep it" if finalizers
                       else "it has not gone yet")
            raise KubeError(f"{ref} {what} but is still there after {timeout:g}s: {waiting}; "
                            "the next pass tries again", reason=reason)
        sleep(0.2)
