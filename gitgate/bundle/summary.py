"""A source of another replica's shard, kept as a summary (`run --shard`). Pure.

A replica plans only its own bundles, yet the rules across sources and bundles must judge
them against the whole repo: an object rendered by two sources, a bundle name claimed twice,
a Karmada policy selecting another bundle's objects, a held workload holding what it uses, a
pause label, an approval by digest. A summary keeps exactly what those rules read, taken
after the source was rendered, placed and grouped in full:

- each bundle's name, its digest (of the full objects), and why it failed;
- every object's identity and labels (selectors, pause labels, duplicates);
- a workload's pod template reduced to the ConfigMaps, Secrets, claims and service account
  it uses (`deps.used_refs` gives the same answer for both);
- Karmada's own objects (policies, scalers, rebalancers) and CustomResourceDefinitions in
  full: they act on other bundles, or decide the scope of kinds.

Everything else (a Secret's data, a ConfigMap's content, container images) is dropped, so a
replica holds its own share in full and the rest of the repo at a small fraction of its size.
"""

from __future__ import annotations

from typing import Any

from gitgate.bundle import deps
from gitgate.bundle.group import group_source
from gitgate.bundle.selectors import is_control_plane
from gitgate.model import Manifest, Problem, RenderedSource
from gitgate.model.objects import BundleFacts, SourceSummary

_KEPT_METADATA = ("name", "namespace", "labels")
_VOLUME_OF = {
    "ConfigMap": lambda name: {"configMap": {"name": name}},
    "Secret": lambda name: {"secret": {"secretName": name}},
    "PersistentVolumeClaim": lambda name: {"persistentVolumeClaim": {"claimName": name}},
}


def kept_whole(obj: Manifest) -> bool:
    """Objects a summary keeps in full: Karmada's own (its policies, scalers, rebalancers and
    interpreter customizations act on other objects) and the definitions of kinds."""
    return is_control_plane(obj) or obj.get("kind") == "CustomResourceDefinition"


def _pod_template(used: set[tuple[str, str]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "summary"}]}
    volumes = [{"name": f"v{index}", **_VOLUME_OF[kind](name)}
               for index, (kind, name) in enumerate(sorted(used)) if kind in _VOLUME_OF]
    if volumes:
        spec["volumes"] = volumes
    accounts = [name for kind, name in used if kind == "ServiceAccount"]
    if accounts:
        spec["serviceAccountName"] = accounts[0]
    return {"spec": spec}


def summarized(obj: Manifest) -> Manifest:
    """What a summary keeps of one object."""
    if kept_whole(obj):
        return obj
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {
        "apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
        "metadata": {k: meta[k] for k in _KEPT_METADATA if k in meta}}
    if deps.is_workload(obj):
        template = _pod_template(deps.used_refs(obj))
        kind = (str(obj.get("apiVersion", "")).rpartition("/")[0], obj.get("kind"))
        if kind == ("", "Pod"):
            out["spec"] = template["spec"]
        elif kind == ("batch", "CronJob"):
            out["spec"] = {"jobTemplate": {"spec": {"template": template}}}
        else:
            out["spec"] = {"template": template}
    return out


def summarize(rendered: RenderedSource,
              scopes: tuple[tuple[tuple[str, str], bool | None], ...],
              warnings: tuple[Problem, ...] = ()) -> RenderedSource:
    """A rendered and placed source (`render.pipeline.finish`) as a summary: grouped once in
    full here, so that each bundle's digest is that of its real objects."""
    facts = tuple(BundleFacts(bundle.name, bundle.digest,
                              tuple(summarized(o) for o in bundle.objects), bundle.problems)
                  for bundle in group_source(rendered))
    objects = tuple(o for fact in facts for o in fact.objects)
    return RenderedSource(rendered.source, objects, rendered.problems, rendered.seconds,
                          summary=SourceSummary(facts, scopes, warnings))
