"""Objects whose change touches an immutable field (a Deployment's selector, a Job's template):
recreated when the object says so (`gitgate.io/recreate: allowed`), never in a suspended bundle
(deleting a template makes Karmada delete it on every member, suspended or not)."""

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
    api_version, namespace = obj["apiVersion"], ref.namespace
    cluster.delete(api_version, ref.kind, namespace, ref.name)
    deadline = clock() + timeout
    while (live := cluster.get(api_version, ref.kind, namespace, ref.name)) is not None:
        if clock() >= deadline:
            finalizers = (live.get("metadata") or {}).get("finalizers") or []
            waiting = (f"finalizer(s) {', '.join(finalizers)} keep it" if finalizers
                       else "it has not gone yet")
            raise KubeError(f"{ref} was deleted to be recreated but is still there after "
                            f"{timeout:g}s: {waiting}; the next pass tries again",
                            reason=Reason.IMMUTABLE_FIELD)
        sleep(0.2)
    return cluster.apply(obj, force=force)
