"""The API server connection from `--kubeconfig` / `--context` (else `$KUBECONFIG`, else
~/.kube/config, else the pod's service account) and the timeout flags. A kubeconfig that
cannot be used is one line naming the file, where it was named (the flag or the variable) and
what is wrong in it, never the client library's exception."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitgate.apiserver.apierrors import Timeouts
from gitgate.errors import ConfigError, GitgateError
from gitgate.passes.onepass import ClusterPort
from gitgate.timespec import duration_flag
from gitgate.yamlio import YamlSyntaxError, load_one


def timeouts_from(args: argparse.Namespace) -> Timeouts:
    return Timeouts(
        connect=duration_flag(args.connect_timeout, "--connect-timeout").total_seconds(),
        read=duration_flag(args.request_timeout, "--request-timeout").total_seconds(),
        max_answer=args.max_answer_size)


def cluster_asked(args: argparse.Namespace) -> bool:
    """Whether a command whose cluster is optional was pointed at one: `--kubeconfig`,
    `--context` or `$KUBECONFIG` (kubectl's order)."""
    return bool(args.kubeconfig or args.context or os.environ.get("KUBECONFIG"))


@dataclass(frozen=True)
class KubeconfigChoice:
    """The kubeconfig files a command reads, and how the user named them."""

    files: tuple[Path, ...]  # empty: in a pod, the service account
    named_by: str  # "--kubeconfig", "$KUBECONFIG", "~/.kube/config", "the pod"

    def said(self) -> str:
        shown = ", ".join(str(f) for f in self.files)
        return f"{shown} ({self.named_by})" if self.files else "the pod's service account"


def kubeconfig_choice(kubeconfig: str | None) -> KubeconfigChoice:
    """Which kubeconfig a command uses, as kubectl chooses it; ConfigError when there is
    none, or the one named does not exist."""
    if kubeconfig:
        return KubeconfigChoice((_existing(Path(kubeconfig), "--kubeconfig"),), "--kubeconfig")
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        found = tuple(Path(p) for p in listed if Path(p).exists())
        if not found:
            raise ConfigError(f"$KUBECONFIG names {', '.join(listed)}, which does not exist; "
                              "fix $KUBECONFIG, or pass the kubeconfig of the Karmada API "
                              "server with --kubeconfig FILE")
        return KubeconfigChoice(tuple(_existing(p, "$KUBECONFIG") for p in found),
                                "$KUBECONFIG")
    home = Path("~/.kube/config").expanduser()
    if home.exists():
        return KubeconfigChoice((_existing(home, "~/.kube/config"),), "~/.kube/config")
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return KubeconfigChoice((), "the pod")
    raise ConfigError("no kubeconfig: --kubeconfig is not given, $KUBECONFIG is not set, "
                      f"{home} does not exist and this is not a pod; pass the kubeconfig of "
                      "the Karmada API server with --kubeconfig FILE (or set KUBECONFIG)")


def _existing(path: Path, named_by: str) -> Path:
    if not path.exists():
        raise ConfigError(f"{named_by} {path}: no such file; check the path")
    if not path.is_file():
        raise ConfigError(f"{named_by} {path} is a folder, not a kubeconfig file; name the "
                          "file itself")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"{named_by} {path} cannot be read (permission denied); fix its "
                          "permissions or pass another")
    return path


def _read(choice: KubeconfigChoice, context: str | None) -> dict[str, Any]:
    """The cluster entry of the context the command uses, the files merged as kubectl merges
    them (the first file to set a name wins); ConfigError for what would fail."""
    documents: list[tuple[Path, dict[str, Any]]] = []
    for file in choice.files:
        try:
            data = load_one(file.read_text(encoding="utf-8"))
        except YamlSyntaxError as exc:
            raise ConfigError(f"not a kubeconfig ({choice.named_by}): {exc}", file=str(file),
                              line=exc.line) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {file} ({choice.named_by}): {exc}") from None
        if data is None:
            continue
        if not isinstance(data, dict):
            raise ConfigError(f"{file} ({choice.named_by}) is not a kubeconfig (expected a "
                              "mapping with clusters, users and contexts)")
        documents.append((file, data))
    if not documents:
        raise ConfigError(f"{choice.said()} is empty; pass the kubeconfig of the Karmada API "
                          "server with --kubeconfig FILE")
    current = context or next((str(d["current-context"]) for _, d in documents
                               if d.get("current-context")), "")
    contexts = _named(documents, "contexts")
    if not current:
        raise ConfigError(f"{choice.said()} has no current-context; pass --context NAME "
                          f"(its contexts: {', '.join(sorted(contexts)) or 'none'})")
    if current not in contexts:
        flag = f"--context {current}" if context else f"current-context {current!r}"
        raise ConfigError(f"{flag}: {choice.said()} has no context named {current!r} (its "
                          f"contexts: {', '.join(sorted(contexts)) or 'none'}); pass --context "
                          "with one of them")
    cluster_name = str((contexts[current] or {}).get("cluster") or "")
    clusters = _named(documents, "clusters")
    if cluster_name not in clusters:
        raise ConfigError(f"context {current!r} of {choice.said()} names cluster "
                          f"{cluster_name!r}, which the kubeconfig does not define; fix the "
                          "kubeconfig")
    return dict(clusters[cluster_name] or {})


def _named(documents: list[tuple[Path, dict[str, Any]]], key: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for _, data in documents:
        for entry in data.get(key) or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                found.setdefault(entry["name"], entry.get(key[:-1]))
    return found


def load_api(args: argparse.Namespace) -> Any:
    """The API client (the official client's ApiClient) the flags, or $KUBECONFIG,
    ~/.kube/config, the pod, ask for."""
    # the kubernetes client loads slowly: only when a command talks to a cluster
    from gitgate.apiserver.transport import load_client

    choice = kubeconfig_choice(args.kubeconfig)
    if choice.files:
        _read(choice, args.context)
    files = os.pathsep.join(str(f) for f in choice.files) or None
    try:
        return load_client(files, args.context, timeouts=timeouts_from(args))
    except GitgateError as exc:
        detail = exc.message
        if detail.startswith(("cannot load a kubeconfig (", "no kubeconfig (")):
            detail = detail.partition("(")[2].rpartition(")")[0]
        raise ConfigError(f"cannot use {choice.said()}: {detail}; fix it or pass another "
                          "with --kubeconfig") from None
    except Exception as exc:  # the client library's own complaint about the file
        raise ConfigError(f"cannot use {choice.said()}: {exc}; fix it or pass another with "
                          "--kubeconfig") from None


def cluster_from(args: argparse.Namespace) -> ClusterPort:
    """The API server the command talks to. No warning that TLS verification is off: only a
    kubeconfig that asks for it (`insecure-skip-tls-verify: true`) turns it off, which is its
    author's choice; kubectl does not warn about it either, and a warning on every command
    only teaches people to skip stderr. `gitgate run` says it once in its log at start."""
    from gitgate.apiserver.verbs import KubeCluster

    return KubeCluster(load_api(args), timeouts=timeouts_from(args))
