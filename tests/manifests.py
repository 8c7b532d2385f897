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
