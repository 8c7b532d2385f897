"""Which objects a workload uses and which expose it. Pure functions over manifests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gitgate.model import Manifest, ObjectRef

WORKLOAD_KINDS = {
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"), ("batch", "Job"), ("batch", "CronJob"), ("", "Pod"),
    ("", "ReplicationController"),
}


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def pod_template(obj: Manifest) -> dict[str, Any] | None:
    """The pod template ({metadata, spec}) of a workload, or None if the object has none."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind = obj.get("kind")
    if (group, kind) == ("", "Pod"):
        return {"metadata": obj.get("metadata") or {}, "spec": obj.get("spec") or {}}
    if (group, kind) == ("batch", "CronJob"):
        template = _get(obj, "spec", "jobTemplate", "spec", "template")
    else:
        template = _get(obj, "spec", "template")
    if isinstance(template, dict) and isinstance(_get(template, "spec", "containers"), list):
        return template
    return None


def is_workload(obj: Manifest) -> bool:
    return pod_template(obj) is not None


def pod_labels(obj: Manifest) -> dict[str, str]:
    template = pod_template(obj) or {}
    labels = _get(template, "metadata", "labels")
    return dict(labels) if isinstance(labels, dict) else {}


def _containers(spec: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                yield container


def used_refs(obj: Manifest) -> set[tuple[str, str]]:
    """(kind, name) of every ConfigMap, Secret, PVC and ServiceAccount the pod template uses."""
    template = pod_template(obj)
    if template is None:
        return set()
    spec = template.get("spec") or {}
    used: set[tuple[str, str]] = set()

    def add(kind: str, name: Any) -> None:
        if isinstance(name, str) and name:
            used.add((kind, name))

    for volume in spec.get("volumes") or []:
        add("ConfigMap", _get(volume, "configMap", "name"))
        add("Secret", _get(volume, "secret", "secretName"))
        add("PersistentVolumeClaim", _get(volume, "persistentVolumeClaim", "claimName"))
        for projected in _get(volume, "projected", "sources") or []:
            add("ConfigMap", _get(projected, "configMap", "name"))
            add("Secret", _get(projected, "secret", "name"))
    for container in _containers(spec):
        for env in container.get("env") or []:
            add("ConfigMap", _get(env, "valueFrom", "configMapKeyRef", "name"))
            add("Secret", _get(env, "valueFrom", "secretKeyRef", "name"))
        for env_from in container.get("envFrom") or []:
            add("ConfigMap", _get(env_from, "configMapRef", "name"))
            add("Secret", _get(env_from, "secretRef", "name"))
    for pull in spec.get("imagePullSecrets") or []:
        add("Secret", _get(pull, "name"))
    add("ServiceAccount", spec.get("serviceAccountName") or spec.get("serviceAccount"))
    return used


def selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    """A non-empty equality selector that the labels satisfy."""
    return (isinstance(selector, dict) and bool(selector)
            and all(labels.get(k) == v for k, v in selector.items()))


def service_selects(service: Manifest, labels: dict[str, str]) -> bool:
    return selector_matches(_get(service, "spec", "selector"), labels)


def ingress_services(ingress: Manifest) -> set[str]:
    names: set[str] = set()
    spec = ingress.get("spec") or {}
    backends = [spec.get("defaultBackend"), spec.get("backend")]
    for rule in spec.get("rules") or []:
        backends += [p.get("backend") for p in _get(rule, "http", "paths") or []
                     if isinstance(p, dict)]
    for backend in backends:
        name = _get(backend, "service", "name") or _get(backend, "serviceName")
        if isinstance(name, str):
            names.add(name)
    return names


def targets_workload(obj: Manifest, workload: Manifest) -> bool:
    """An HPA whose scaleTargetRef names the workload, or a PDB selecting its pods."""
    kind = obj.get("kind")
    if kind == "HorizontalPodAutoscaler":
        target = _get(obj, "spec", "scaleTargetRef") or {}
        return (target.get("kind") == workload.get("kind")
                and target.get("name") == _get(workload, "metadata", "name"))
    if kind == "PodDisruptionBudget":
        return selector_matches(_get(obj, "spec", "selector", "matchLabels"), pod_labels(workload))
    return False


def dependency_refs(workload: Manifest, present: set[ObjectRef]) -> set[ObjectRef]:
    """Refs among `present` that the workload uses (core group, same namespace)."""
    namespace = _get(workload, "metadata", "namespace") or ""
    wanted = {ObjectRef("", kind, namespace, name) for kind, name in used_refs(workload)}
    return wanted & present


def exposing(workload: Manifest, objects: Iterable[Manifest]) -> list[Manifest]:
    """Services selecting the workload's pods, and HPAs/PDBs targeting it (same namespace)."""
    namespace = _get(workload, "metadata", "namespace") or ""
    labels = pod_labels(workload)
    found = []
    for obj in objects:
        if (_get(obj, "metadata", "namespace") or "") != namespace:
            continue
        if (obj.get("kind") == "Service" and service_selects(obj, labels)) or targets_workload(
                obj, workload):
            found.append(obj)
    return found
