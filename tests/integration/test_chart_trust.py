"""Where charts may come from is a trust setting: `check`/`plan --since REV` fetch by the
allow-list (and the credentials references) of the gitgate.yaml a loop trusting REV keeps in
force, never by a change that does not count. A registry added by a commit no gate signer
signed gets no request, and its chart is refused."""

from __future__ import annotations

import contextlib
import hashlib
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import git as gitpython
import pytest

from tests.conftest import set_identity
from tests.support.chartservers import (
    ChartCA,
    ChartRepo,
    Registry,
    allow,
    free_port,
    gitgate_cli,
    make_chart,
    package,
)
from tests.support.looping import Upstream, start_run, terminate, wait_for
from tests.support.signing import NEEDED, Keys, push_signed

pytestmark = [pytest.mark.integration, NEEDED]


@pytest.fixture
def keys(tmp_path):
    made = Keys(tmp_path, ("alice", "carol"))
    yield made
    made.close()


@contextlib.contextmanager
def _served(tmp_path: Path) -> Iterator[tuple[ChartCA, ChartRepo, Registry, str, str]]:
    """A chart repository and a registry under one test CA; chart web 1.0.0 pushed to the
    registry: its oci:// path and its archive's digest."""
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    with ChartRepo(tmp_path / "served", ca, home) as repo, \
            Registry(tmp_path / "registry", ca, home) as registry:
        oci = registry.push(package(make_chart(tmp_path / "s", "web", "1.0.0"),
                                    tmp_path / "packages", home))
        digest = "sha256:" + hashlib.sha256(
            (tmp_path / "packages" / "web-1.0.0.tgz").read_bytes()).hexdigest()
        yield ca, repo, registry, oci, digest


def _signer(keys: Keys, name: str) -> str:
    return f"{name}@example.com {(keys.folder / f'{name}.pub').read_text()}"


def test_a_registry_an_untrusted_commit_allows_gets_no_request(keys, tmp_path: Path):
    with _served(tmp_path) as (ca, repo, registry, oci, digest):
        root = tmp_path / "repo"
        work = gitpython.Repo.init(root, initial_branch="main")
        set_identity(work, "Dev", "dev@example.com")
        trusted = ("verify:\n  allowedSigners: .gitgate/allowed_signers\n"
                   "gates:\n  signers: [alice@example.com]\n")
        narrow = trusted + allow({"url": repo.url, "caFile": str(ca.pem)})
        wide = trusted + allow({"url": repo.url, "caFile": str(ca.pem)},
                               {"url": oci, "caFile": str(ca.pem)})

        def commit(who: str | None, files: dict[str, str], what: str) -> None:
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            work.git.add("-A")
            keys.commit(root, who, what)

        commit("alice", {"gitgate.yaml": narrow,
                         ".gitgate/allowed_signers": _signer(keys, "alice")
                         + _signer(keys, "carol")}, "base")
        work.git.checkout("-b", "feature")
        uses = {"apps/web/bundle.yaml": f"helm: {{chart: {oci}/web, version: '1.0.0'}}\n"
                                        "placement: none\n",
                "apps/web/chart.lock.yaml": f"charts:\n- repo: {oci}\n  chart: web\n"
                                            "  requested: 1.0.0\n  version: 1.0.0\n"
                                            f"  digest: '{digest}'\n"}
        commit("carol", {"gitgate.yaml": wide, **uses}, "allow the registry, and use it")
        before = len(registry.requests())
        cache = tmp_path / "cache"

        checked = gitgate_cli("check", str(root), "--since", "main", "-o", "json", cache=cache)
        assert checked.returncode == 1, checked.stderr
        cases = json.loads(checked.stdout)["cases"]
        refused = [f for c in cases for f in c["failures"] if f["type"] == "ChartNotAllowed"]
        assert len(refused) == 1 and f"{oci}/web" in refused[0]["message"]
        assert "UntrustedGates" in {f["type"] for c in cases for f in c["failures"]}
        planned = gitgate_cli("plan", str(root), "--since", "main", "-o", "json", cache=cache)
        errors = json.loads(planned.stdout)["errors"]
        assert [e["reason"] for e in errors if e["source"] == "apps/web"] == ["ChartNotAllowed"]
        assert len(registry.requests()) == before  # the registry's log shows no request
        # without --since, the checkout's own allow-list: what a developer runs locally
        assert gitgate_cli("check", str(root), cache=cache).returncode == 0

        # the same widening signed by a gate signer counts: the chart is fetched
        work.git.checkout("main")
        work.git.checkout("-b", "signed")
        commit("alice", {"gitgate.yaml": wide, **uses}, "allow the registry, signed")
        fresh = tmp_path / "fresh"
        signed = gitgate_cli("check", str(root), "--since", "main", cache=fresh)
        assert signed.returncode == 0, signed.stdout + signed.stderr
        assert len(registry.requests()) > before


def test_the_loop_refuses_a_chart_from_a_registry_an_untrusted_commit_allows(
        keys, kube, tmp_path: Path):
    with _served(tmp_path) as (ca, repo, registry, oci, digest):
        upstream = Upstream(tmp_path, kube)
        trusted = ("verify:\n  allowedSigners: .gitgate/allowed_signers\n"
                   "gates:\n  signers: [alice@example.com]\n"
                   "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n")
        base = push_signed(upstream, keys, "alice", {
            "gitgate.yaml": trusted + allow({"url": repo.url, "caFile": str(ca.pem)}),
            ".gitgate/allowed_signers": _signer(keys, "alice") + _signer(keys, "carol")},
            "base")
        port = free_port()
        proc = start_run(upstream.url, kube, tmp_path / "run-cache", f"127.0.0.1:{port}")

        def status() -> dict:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/status",
                                            timeout=5) as answer:
                    return json.loads(answer.read())
            except OSError:
                return {}

        def web() -> dict:
            return next((b for b in (status().get("pass") or {}).get("bundles", [])
                         if b["name"] == "apps-web"), {})

        try:
            wait_for(lambda: proc.poll() is not None or status().get("revision") == base,
                     timeout=60)
            before = len(registry.requests())
            widened = push_signed(upstream, keys, "carol", {
                "gitgate.yaml": trusted + allow({"url": repo.url, "caFile": str(ca.pem)},
                                                {"url": oci, "caFile": str(ca.pem)}),
                "apps/web/bundle.yaml": f"namespace: {upstream.ns}\n"
                                        f"helm: {{chart: {oci}/web, version: '1.0.0'}}\n",
                "apps/web/chart.lock.yaml": f"charts:\n- repo: {oci}\n  chart: web\n"
                                            "  requested: 1.0.0\n  version: 1.0.0\n"
                                            f"  digest: '{digest}'\n"},
                "allow the registry, and use it")
            wait_for(lambda: proc.poll() is not None or status().get("revision") == widened
                     and web().get("verdict") == "failed", timeout=60)
            assert proc.poll() is None
            assert "not in gitgate.yaml's charts.repositories" in web()["message"]
            assert status()["gateTrust"]["restored"] == ["gitgate.yaml"]
            assert len(registry.requests()) == before  # the registry's log shows no request
            assert kube.cluster.get("v1", "ConfigMap", upstream.ns, "web-web") is None
        finally:
            terminate(proc, timeout=30)
        logs = proc.stderr.read()
        assert proc.returncode == 0, logs[-2000:]
