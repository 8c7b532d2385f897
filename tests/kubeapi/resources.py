"""The built-in resources the emulator serves, and discovery documents."""

from __future__ import annotations

from dataclasses import dataclass

from tests.kubeapi.fields import ATOMIC, ListKeys
from tests.kubeapi.fields import BUILTIN as BUILTIN_LISTS


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    deduced: bool = False  # a custom resource whose schema preserves unknown fields
    lists: ListKeys = ATOMIC  # which of its lists are list maps
    status_subresource: bool = False  # a custom resource whose CRD enables `status`

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def discovery_entry(self) -> dict:
        entry = {"name": self.plural, "singularName": self.singular,
                 "namespaced": self.namespaced, "kind": self.kind,
                 "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                           "update", "watch"]}
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        return entry


def _r(group, version, kind, plural, namespaced=True, *short):
    return Resource(group, version, kind, plural, namespaced, tuple(short), lists=BUILTIN_LISTS)


BUILTIN: tuple[Resource, ...] = (
    _r("", "v1", "Namespace", "namespaces", False, "ns"),
    _r("", "v1", "ConfigMap", "configmaps", True, "cm"),
    _r("", "v1", "Secret", "secrets"),
    _r("", "v1", "Service", "services", True, "svc"),
    _r("", "v1", "ServiceAccount", "serviceaccounts", True, "sa"),
    _r("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc"),
    _r("", "v1", "PersistentVolume", "persistentvolumes", False, "pv"),
    _r("", "v1", "Pod", "pods", True, "po"),
    _r("", "v1", "ReplicationController", "replicationcontrollers", True, "rc"),
    _r("", "v1", "Endpoints", "endpoints", True, "ep"),
    _r("", "v1", "Event", "events", True, "ev"),
    _r("events.k8s.io", "v1", "Event", "events", True, "ev"),
    _r("", "v1", "LimitRange", "limitranges", True, "limits"),
    _r("", "v1", "ResourceQuota", "resourcequotas", True, "quota"),
    _r("", "v1", "Node", "nodes", False, "no"),
    _r("apps", "v1", "Deployment", "deployments", True, "deploy"),
    _r("apps", "v1", "StatefulSet", "statefulsets", True, "sts"),
    _r("apps", "v1", "DaemonSet", "daemonsets", True, "ds"),
    _r("apps", "v1", "ReplicaSet", "replicasets", True, "rs"),
    _r("apps", "v1", "ControllerRevision", "controllerrevisions"),
    _r("batch", "v1", "Job", "jobs"),
    _r("batch", "v1", "CronJob", "cronjobs", True, "cj"),
    _r("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, "hpa"),
    _r("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "pdb"),
    _r("networking.k8s.io", "v1", "Ingress", "ingresses", True, "ing"),
    _r("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, "netpol"),
    _r("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False),
    _r("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    _r("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _r("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
       False, "crd", "crds"),
    _r("coordination.k8s.io", "v1", "Lease", "leases"),
    _r("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, "sc"),
    _r("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, "pc"),
)


# What Karmada's control plane serves besides the policy CRDs (its own CRDs, installed with it):
# the bindings in which it records, per resource template, where and whether to dispatch.
KARMADA_WORK: tuple[Resource, ...] = (
    Resource("work.karmada.io", "v1alpha2", "ResourceBinding", "resourcebindings", True,
             ("rb",), True),
    Resource("work.karmada.io", "v1alpha2", "ClusterResourceBinding", "clusterresourcebindings",
             False, ("crb",), True),
    # per binding and member cluster, what Karmada dispatches there (namespace
    # karmada-es-<cluster>), with the overrides it applied in its annotations
    Resource("work.karmada.io", "v1alpha1", "Work", "works", True, (), True),
    # the member clusters (karmada-aggregated-apiserver serves them on a real Karmada)
    Resource("cluster.karmada.io", "v1alpha1", "Cluster", "clusters", False, (), True),
)


def resource_list(group_version: str, resources: list[Resource]) -> dict:
    doc = {"kind": "APIResourceList", "groupVersion": group_version,
           "resources": [r.discovery_entry() for r in resources]}
    if "/" in group_version:
        doc["apiVersion"] = "v1"
    return doc


def group_list(resources: list[Resource]) -> dict:
    groups: dict[str, list[str]] = {}
    for resource in resources:
        if resource.group:
            versions = groups.setdefault(resource.group, [])
            if resource.version not in versions:
                versions.append(resource.version)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": name,
         "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
         "preferredVersion": {"groupVersion": f"{name}/{versions[0]}", "version": versions[0]}}
        for name, versions in groups.items()]}
