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
