"""Whether a kind is namespaced, and who says so. Plain data.

The API server is the authority: what its discovery serves decides (`apiserver.discovery`).
Without one (an offline `plan`), the kinds a kube-apiserver 1.36 with Karmada's CRDs serves
(its discovery is recorded in tests/data/kube-apiserver-1.36-karmada.json) are known here,
group by group: a kind missing from a group listed here is not taken to be namespaced, it is
unknown. A repo's CustomResourceDefinition never changes the scope of a kind this table or
the API server knows; it speaks only for a kind neither knows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

Kind = tuple[str, str]  # (group, kind); "" is the core group


def _kinds(group: str, namespaced: str, cluster: str = "") -> dict[Kind, bool]:
    return {**{(group, k): True for k in namespaced.split()},
            **{(group, k): False for k in cluster.split()}}


BUILTIN_SCOPES: Mapping[Kind, bool] = {
    **_kinds("", "Binding ConfigMap Endpoints Event LimitRange PersistentVolumeClaim Pod "
                 "PodTemplate ReplicationController ResourceQuota Secret ServiceAccount Service",
             "ComponentStatus Namespace Node PersistentVolume"),
    **_kinds("admissionregistration.k8s.io", "",
             "MutatingWebhookConfiguration ValidatingWebhookConfiguration "
             "ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding "
             "MutatingAdmissionPolicy MutatingAdmissionPolicyBinding"),
    **_kinds("apiextensions.k8s.io", "", "CustomResourceDefinition"),
    **_kinds("apiregistration.k8s.io", "", "APIService"),
    **_kinds("apps", "ControllerRevision DaemonSet Deployment ReplicaSet StatefulSet"),
    **_kinds("authentication.k8s.io", "", "SelfSubjectReview TokenReview"),
    **_kinds("authorization.k8s.io", "LocalSubjectAccessReview",
             "SelfSubjectAccessReview SelfSubjectRulesReview SubjectAccessReview"),
    **_kinds("autoscaling", "HorizontalPodAutoscaler"),
    **_kinds("batch", "CronJob Job"),
    **_kinds("certificates.k8s.io", "PodCertificateRequest",
             "CertificateSigningRequest ClusterTrustBundle"),
    **_kinds("coordination.k8s.io", "Lease LeaseCandidate"),
    **_kinds("discovery.k8s.io", "EndpointSlice"),
    **_kinds("events.k8s.io", "Event"),
    **_kinds("flowcontrol.apiserver.k8s.io", "", "FlowSchema PriorityLevelConfiguration"),
    **_kinds("networking.k8s.io", "Ingress NetworkPolicy", "IngressClass IPAddress ServiceCIDR"),
    **_kinds("node.k8s.io", "", "RuntimeClass"),
    **_kinds("policy", "PodDisruptionBudget"),
    **_kinds("rbac.authorization.k8s.io", "Role RoleBinding", "ClusterRole ClusterRoleBinding"),
    **_kinds("resource.k8s.io", "ResourceClaim ResourceClaimTemplate",
             "DeviceClass ResourceSlice"),
    **_kinds("scheduling.k8s.io", "", "PriorityClass"),
    **_kinds("storage.k8s.io", "CSIStorageCapacity",
             "CSIDriver CSINode StorageClass VolumeAttachment VolumeAttributesClass"),
    # Karmada's control plane (its CRDs and karmada-aggregated-apiserver)
    **_kinds("apps.karmada.io", "", "WorkloadRebalancer"),
    **_kinds("autoscaling.karmada.io", "CronFederatedHPA FederatedHPA"),
    **_kinds("cluster.karmada.io", "", "Cluster"),
    **_kinds("config.karmada.io", "",
             "ResourceInterpreterCustomization ResourceInterpreterWebhookConfiguration"),
    **_kinds("multicluster.x-k8s.io", "ServiceExport ServiceImport"),
    **_kinds("networking.karmada.io", "MultiClusterIngress MultiClusterService"),
    **_kinds("policy.karmada.io", "FederatedResourceQuota OverridePolicy PropagationPolicy",
             "ClusterOverridePolicy ClusterPropagationPolicy ClusterTaintPolicy"),
    **_kinds("remedy.karmada.io", "", "Remedy"),
    **_kinds("search.karmada.io", "", "ResourceRegistry"),
    **_kinds("work.karmada.io", "ResourceBinding Work", "ClusterResourceBinding"),
}


def builtin_scope(group: str, kind: str) -> bool | None:
    """Whether Kubernetes or Karmada serve (group, kind) namespaced; None: not one of theirs."""
    return BUILTIN_SCOPES.get((group, kind))


@dataclass(frozen=True)
class ScopeTable:
    """The scope of each kind a pass renders, as rendering placed them: `known` holds what the
    API server answered (when one was asked) and what a repo CRD says of a kind neither the
    server nor the built-in table knows; the built-in table stands behind both.
    `unserved`: kinds only a repo CRD defines while the API server (asked) does not serve
    them: nothing of the repo speaks for them until the server establishes the CRD."""

    known: tuple[tuple[Kind, bool], ...] = ()
    unserved: frozenset[Kind] = frozenset()
    served: bool = False  # an API server was asked

    @cached_property
    def _known(self) -> dict[Kind, bool]:
        return dict(self.known)

    def namespaced(self, group: str, kind: str) -> bool | None:
        """True or False when it is known, None when nobody that may say it does."""
        if (group, kind) in self.unserved:
            return None
        found = self._known.get((group, kind))
        return found if found is not None else builtin_scope(group, kind)

    def said_by(self, group: str, kind: str) -> str:
        """Who decided the kind's scope, for messages."""
        if (group, kind) in self._known and self.served:
            return "as the API server serves it"
        if (group, kind) in self._known:
            return "as its CustomResourceDefinition in the repo says"
        return "as Kubernetes and Karmada serve it"

    def unknown_why(self, group: str, kind: str) -> str:
        kind_said = f"{kind} ({group or 'core'})"
        if (group, kind) in self.unserved:
            return (f"the kind {kind_said} is defined by a CustomResourceDefinition in the repo "
                    "that the API server does not serve yet: its scope counts once the server "
                    "has established it (a later pass)")
        if self.served:
            return (f"the API server does not serve the kind {kind_said}, and gitgate does not "
                    "know it: whether it is namespaced cannot be told")
        return (f"the kind {kind_said} is neither a Kubernetes or Karmada kind gitgate knows "
                "nor defined by a CustomResourceDefinition in the repo: whether it is "
                "namespaced cannot be told without the API server (plan --kubeconfig)")
