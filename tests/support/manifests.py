"""YAML text of the objects the integration and end-to-end tests commit to their repos."""

from __future__ import annotations

import textwrap


def cm(name: str, ns: str, data: str = "v1", annotations: str = "") -> str:
    extra = f"\n  annotations: {{{annotations}}}" if annotations else ""
    return textwrap.dedent(f"""\
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {name}
          namespace: {ns}""") + extra + f"\ndata: {{value: '{data}'}}\n"


def deployment(name: str, ns: str, image: str = "web:1", config: str | None = None) -> str:
    """A Deployment reading its environment from ConfigMap `config` (default `<name>-config`)."""
    config = config or f"{name}-config"
    return textwrap.dedent(f"""\
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}, namespace: {ns}}}
        spec:
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              containers:
                - name: {name}
                  image: {image}
                  envFrom: [{{configMapRef: {{name: {config}}}}}]
        """)


def pre_sync_job(ns: str, prefix: str = "migrate-") -> str:
    """A Helm pre-install/pre-upgrade hook Job with only a generated name, as charts write
    their migrations."""
    return textwrap.dedent(f"""\
        ---
        apiVersion: batch/v1
        kind: Job
        metadata:
          generateName: {prefix}
          namespace: {ns}
          annotations: {{helm.sh/hook: "pre-install,pre-upgrade"}}
        spec:
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers: [{{name: migrate, image: "busybox:1.36", command: ["true"]}}]
        """)


# a Deployment reading a ConfigMap, for per-cluster customizations (`clusters:` patches)
CUSTOMIZED_WEB = textwrap.dedent("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers:
            - {name: web, image: "nginx:1.0", envFrom: [{configMapRef: {name: web-config}}]}
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: web-config}
    data: {mode: green, size: "1"}
    """)


def api_chart(folder: str, tag: str) -> dict[str, str]:
    """A Helm chart with `replicas` and `image.tag` values, for per-cluster values."""
    return {
        f"{folder}/Chart.yaml": "apiVersion: v2\nname: api\nversion: 0.1.0\n",
        f"{folder}/values.yaml": f"replicas: 1\nimage: {{tag: '{tag}'}}\n",
        f"{folder}/templates/api.yaml": textwrap.dedent("""\
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: api}
            spec:
              replicas: {{ .Values.replicas }}
              selector: {matchLabels: {app: api}}
              template:
                metadata: {labels: {app: api}}
                spec:
                  containers: [{name: api, image: "nginx:{{ .Values.image.tag }}"}]
            """)}


def web_patches(replicas: int) -> str:
    """A `clusters:` entry patching CUSTOMIZED_WEB for member2: JSON 6902 on the Deployment,
    strategic merge on the ConfigMap."""
    return textwrap.dedent(f"""\
        clusters:
          - clusters: [member2]
            patches:
              - target: {{kind: Deployment, name: web}}
                patch: [{{op: replace, path: /spec/replicas, value: {replicas}}}]
              - patch:
                  apiVersion: v1
                  kind: ConfigMap
                  metadata: {{name: web-config}}
                  data: {{mode: blue}}
        """)


def crd_yaml(group: str, kind: str) -> str:
    """A namespaced CRD with a schema that keeps any field."""
    plural = kind.lower() + "s"
    return textwrap.dedent(f"""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {{name: {plural}.{group}}}
        spec:
          group: {group}
          scope: Namespaced
          names: {{kind: {kind}, plural: {plural}, singular: {kind.lower()},
                   listKind: {kind}List}}
          versions:
            - name: v1
              served: true
              storage: true
              schema:
                openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
        """)


def db_image_override(ns: str, image: str) -> str:
    """An OverridePolicy `db-image` that sets Deployment `db`'s image on member2."""
    return textwrap.dedent(f"""\
        apiVersion: policy.karmada.io/v1alpha1
        kind: OverridePolicy
        metadata: {{name: db-image, namespace: {ns}}}
        spec:
          resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: db}}]
          overrideRules:
            - targetCluster: {{clusterNames: [member2]}}
              overriders:
                plaintext:
                  - {{path: /spec/template/spec/containers/0/image, operator: replace,
                      value: "{image}"}}
        """)
