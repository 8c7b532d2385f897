"""A `rollout` (gitgate.yaml's `defaults`, or a bundle.yaml's): waves of clusters by name or
label selector, bake, progress deadline, what a failure does; and a bundle's `clusters`
customizations (values and patches per cluster)."""

from __future__ import annotations

from typing import Any

from gitgate.errors import ConfigError
from gitgate.model import Manifest, RolloutSpec
from gitgate.model.analysisspec import Provider
from gitgate.model.clusterspec import Customization
from gitgate.model.rolloutspec import (
    ON_FAILURE,
    OPERATORS,
    ClusterSelector,
    Requirement,
    Wave,
)
from gitgate.source.analysisconfig import parse_analysis
from gitgate.source.configfields import (
    entries,
    labels_of,
    optional_mapping,
    reject_unknown,
    str_list,
)
from gitgate.timespec import parse_duration

_ROLLOUT_KEYS = {"waves", "bake", "progressDeadline", "onFailure", "analysis"}



_CUSTOMIZATION_KEYS = {"clusters", "labelSelector", "values", "patches"}



_PATCH_KEYS = {"patch", "target"}



_TARGET_KEYS = {"group", "version", "kind", "name", "namespace", "labelSelector",
                "annotationSelector"}



def parse_rollout(value: Any, file: str, key: str, providers: tuple[Provider, ...] = ()
                  ) -> RolloutSpec | None:
    """`rollout: {waves: [{clusters: [a]}, {clusters: [b, c]}], bake: 5m,
    progressDeadline: 10m, onFailure: hold, analysis: [...]}` (`providers`: gitgate.yaml's
    `analysis.providers`, which the checks must name)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a mapping", file=file)
    reject_unknown(value, _ROLLOUT_KEYS, file, f"{key}.")
    waves_value = value.get("waves")
    if not isinstance(waves_value, list) or not waves_value:
        raise ConfigError(f"{key}.waves must be a non-empty list of {{clusters: [names]}} or "
                          "{labelSelector: {matchLabels: {...}}}", file=file)
    waves: list[Wave] = []
    seen: set[str] = set()
    for index, wave_value in enumerate(waves_value):
        wave = _wave(wave_value, file, f"{key}.waves[{index}]")
        twice = sorted(seen & set(wave.clusters))
        if twice:
            raise ConfigError(f"{key}.waves[{index}]: cluster(s) {', '.join(twice)} already "
                              "in an earlier wave", file=file)
        seen |= set(wave.clusters)
        waves.append(wave)
    on_failure = value.get("onFailure", "hold")
    if on_failure not in ON_FAILURE:
        raise ConfigError(f"{key}.onFailure must be one of {', '.join(ON_FAILURE)}, not "
                          f"{on_failure!r}", file=file)
    durations = {}
    for field_name, default in (("bake", "5m"), ("progressDeadline", "10m")):
        text = value.get(field_name, default)
        try:
            durations[field_name] = parse_duration(str(text))
        except ConfigError as exc:
            raise ConfigError(f"{key}.{field_name}: {exc.message}", file=file) from None
    return RolloutSpec(tuple(waves), durations["bake"], durations["progressDeadline"],
                       on_failure, parse_analysis(value.get("analysis"), file,
                                                  f"{key}.analysis", providers))



def _wave(value: Any, file: str, where: str) -> Wave:
    """`{clusters: [member1]}` or `{labelSelector: {matchLabels: {...}, matchExpressions:
    [...]}}` (a selector over Karmada's Cluster objects, resolved at each pass)."""
    if not isinstance(value, dict) or len(value) != 1 or not (
            set(value) <= {"clusters", "labelSelector"}):
        raise ConfigError(f"{where} must be {{clusters: [member cluster names]}} or "
                          "{labelSelector: {matchLabels: {...}, matchExpressions: [...]}}",
                          file=file)
    if "clusters" in value:
        names = str_list(value["clusters"], file, f"{where}.clusters")
        if not names:
            raise ConfigError(f"{where}.clusters names no cluster", file=file)
        return Wave(names)
    return Wave(selector=cluster_selector(value["labelSelector"], file, f"{where}.labelSelector"))



def cluster_selector(value: Any, file: str, where: str) -> ClusterSelector:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{where} must be a mapping with matchLabels and/or "
                          "matchExpressions", file=file)
    reject_unknown(value, {"matchLabels", "matchExpressions"}, file, f"{where}.")
    labels = labels_of(value.get("matchLabels") or {}, file, f"{where}.matchLabels")
    expressions = value.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ConfigError(f"{where}.matchExpressions must be a list", file=file)
    requirements = []
    for index, item in enumerate(expressions):
        at = f"{where}.matchExpressions[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ConfigError(f"{at} must be {{key, operator, values}}", file=file)
        reject_unknown(item, {"key", "operator", "values"}, file, f"{at}.")
        operator = item.get("operator")
        if operator not in OPERATORS:
            raise ConfigError(f"{at}.operator must be one of {', '.join(OPERATORS)}, not "
                              f"{operator!r}", file=file)
        values = str_list(item.get("values") or [], file, f"{at}.values")
        if (operator in ("In", "NotIn")) != bool(values):
            raise ConfigError(f"{at}: {operator} " + ("needs values" if not values else
                                                      "takes no values"), file=file)
        requirements.append(Requirement(item["key"], operator, values))
    if not labels and not requirements:
        raise ConfigError(f"{where} selects nothing: give matchLabels or matchExpressions "
                          "(an empty selector would choose every cluster)", file=file)
    return ClusterSelector(tuple(sorted(labels.items())), tuple(requirements))



def parse_customizations(value: Any, file: str) -> tuple[Customization, ...]:
    """`clusters: [{clusters: [member2] | labelSelector: {...}, values: {...},
    patches: [{target: {kind, name, ...}, patch: <JSON 6902 list or strategic merge>}]}]`."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise ConfigError("clusters must be a non-empty list of {clusters: [names] or "
                          "labelSelector: {...}, values: {...}, patches: [...]}", file=file)
    out = []
    named: set[str] = set()
    for where, item in entries(value, file, "clusters", _CUSTOMIZATION_KEYS):
        chosen = _wave({k: v for k, v in item.items() if k in ("clusters", "labelSelector")},
                       file, where)
        twice = sorted(named & set(chosen.clusters))
        if twice:
            raise ConfigError(f"{where}: cluster(s) {', '.join(twice)} already customized by "
                              "an earlier entry; merge the two entries", file=file)
        named |= set(chosen.clusters)
        values = optional_mapping(item.get("values"), file, f"{where}.values") or {}
        patches = _patches(item.get("patches"), file, f"{where}.patches")
        if not values and not patches:
            raise ConfigError(f"{where} changes nothing: give values (Helm sources) or "
                              "patches", file=file)
        out.append(Customization(chosen.clusters, chosen.selector, values, patches))
    return tuple(out)



def _patches(value: Any, file: str, where: str) -> tuple[Manifest, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"{where} must be a list of {{target: {{kind, name}}, patch: ...}}",
                          file=file)
    out = []
    for index, item in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(item, dict) or "patch" not in item:
            raise ConfigError(f"{at} must be {{target: {{kind, name, ...}}, patch: a JSON 6902 "
                              "list or a strategic-merge mapping}}", file=file)
        reject_unknown(item, _PATCH_KEYS, file, f"{at}.")
        patch = item["patch"]
        target = optional_mapping(item.get("target"), file, f"{at}.target")
        if target is not None:
            reject_unknown(target, _TARGET_KEYS, file, f"{at}.target.")
        if isinstance(patch, list):
            if target is None:
                raise ConfigError(f"{at}: a JSON 6902 patch needs a target", file=file)
            for op_index, op in enumerate(patch):
                if not isinstance(op, dict) or not isinstance(op.get("path"), str) or (
                        op.get("op") not in ("add", "remove", "replace", "move", "copy",
                                             "test")):
                    raise ConfigError(f"{at}.patch[{op_index}] must be {{op, path, value}} "
                                      "(RFC 6902)", file=file)
        elif not isinstance(patch, dict):
            raise ConfigError(f"{at}.patch must be a JSON 6902 list or a strategic-merge "
                              "mapping", file=file)
        out.append({"patch": patch, **({"target": target} if target is not None else {})})
    return tuple(out)
