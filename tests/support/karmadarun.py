"""Repos for the end-to-end tests on the Karmada harness, and checking both members."""

from __future__ import annotations

from tests.e2e.karmada import Karmada, Run, wait_for
from tests.support.manifests import cm as configmap
from tests.support.manifests import deployment


def app_files(run: Run, name: str, image: str, value: str, extra: str | None = None) -> dict:
    ns = run.ns(name)
    text = configmap(f"{name}-config", ns, value) + deployment(name, ns, image)
    if extra is not None:
        text += configmap(f"{name}-extra", ns, extra)
    return {f"{name}/bundle.yaml": f"name: {run.bundle(name)}\ndependsOn: [{run.bundle('ns')}]\n",
            f"{name}/app.yaml": text}


def with_namespaces(run: Run, *names: str) -> dict:
    docs = "".join(f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {run.ns(n)}}}\n"
                   for n in names)
    return {"ns/bundle.yaml": f"name: {run.bundle('ns')}\n", "ns/namespaces.yaml": docs}


def on_both(karmada: Karmada, read, expected) -> None:
    for member in ("member1", "member2"):
        wait_for(lambda m=member: read(m) == expected, message=f"{member} gets {expected}")
