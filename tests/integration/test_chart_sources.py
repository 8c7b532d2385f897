"""Charts from elsewhere, with real servers: an HTTPS chart repository served from a folder
(test CA) and the CNCF distribution registry (`docker-registry`), charts packaged and pushed
with the real helm; `gitgate lock`, `render`, `check` and `plan` run as the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitgate.cli import main
from tests.conftest import committed_repo, write_files
from tests.support.chartservers import (
    ChartCA,
    ChartRepo,
    Registry,
    helm,
    make_chart,
    package,
)

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[2]


def gitgate(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITGATE_CHART_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "gitgate.cli", *argv], capture_output=True,
                          text=True, timeout=180, cwd=REPO_ROOT, env=env)


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def allow(*entries: dict[str, object]) -> str:
    return "charts:\n  repositories:\n" + "".join(
        "    - " + json.dumps(entry) + "\n" for entry in entries)


def rendered(cache: Path, root: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    done = gitgate("render", str(root), "-o", "json", cache=cache)
    assert done.returncode in (0, 1), done.stderr
    return done, json.loads(done.stdout)


def objects(document: dict, bundle: str) -> list[dict]:
    return next(b["objects"] for b in document["bundles"] if b["name"] == bundle)


@pytest.fixture
def servers(tmp_path: Path):
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    with ChartRepo(tmp_path / "served", ca, home) as repo, \
            Registry(tmp_path / "registry", ca, home) as registry:
        yield ca, repo, registry, home


def test_a_published_chart_by_version_renders_as_helm_template_of_it(servers, tmp_path):
    ca, repo, _, home = servers
    for version in ("6.5.0", "6.6.0"):
        repo.publish(package(make_chart(tmp_path / f"src-{version}", "podinfo", version),
                             tmp_path / "packages", home))
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": allow({"url": repo.url, "caFile": str(ca.pem)}),
        "apps/podinfo/bundle.yaml": f"helm: {{repo: {repo.url}, chart: podinfo, "
                                    "version: '6.5.0'}\nvalues: {message: hi}\n",
    })
    cache = tmp_path / "cache"
    locked = gitgate("lock", str(root), cache=cache)
    assert locked.returncode == 0, locked.stderr
    lock = (root / "apps/podinfo/chart.lock.yaml").read_text()
    archive = tmp_path / "packages" / "podinfo-6.5.0.tgz"
    assert "version: 6.5.0" in lock and sha256(archive) in lock

    done, document = rendered(cache, root)
    assert done.returncode == 0, done.stderr
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"message": "hi"}))
    reference = helm("template", "podinfo", str(archive), "--include-crds", "--namespace",
                     "default", "--values", str(values), home=home)
    assert "message: \"hi\"" in reference
    got = objects(document, "apps-podinfo")
    assert [o["data"] for o in got] == [{"message": "hi", "version": "6.5.0"}]
    assert got[0]["metadata"]["labels"]["helm.sh/chart"] == "podinfo-6.5.0"


def test_an_oci_chart_a_range_resolved_and_locked_and_nothing_fetched_again(servers, tmp_path):
    ca, _, registry, home = servers
    for version in ("1.2.0", "1.3.0", "2.0.0"):
        registry.push(package(make_chart(tmp_path / f"src-{version}", "web", version),
                              tmp_path / "packages", home))
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": allow({"url": f"oci://{registry.host}/charts", "caFile": str(ca.pem)}),
        "apps/web/bundle.yaml": f"helm: {{chart: oci://{registry.host}/charts/web, "
                                "version: '^1.2'}\n",
    })
    cache = tmp_path / "cache"
    assert gitgate("lock", str(root), cache=cache).returncode == 0
    lock = (root / "apps/web/chart.lock.yaml").read_text()
    assert "version: 1.3.0" in lock and "requested: ^1.2" in lock
    assert sha256(tmp_path / "packages" / "web-1.3.0.tgz") in lock
    # a newer 1.x published later changes nothing: the range was resolved once
    registry.push(package(make_chart(tmp_path / "src-1.4.0", "web", "1.4.0"),
                          tmp_path / "packages", home))
    assert gitgate("lock", str(root), cache=cache).returncode == 0
    assert (root / "apps/web/chart.lock.yaml").read_text() == lock
    before = len(registry.requests())
    done, document = rendered(cache, root)
    assert done.returncode == 0, done.stderr
    assert objects(document, "apps-web")[0]["data"]["version"] == "1.3.0"
    assert len(registry.requests()) == before  # in the store since `lock`: nothing fetched


def test_dependencies_from_a_chart_repository_and_a_registry_are_locked_and_rendered(
        servers, tmp_path):
    ca, repo, registry, home = servers
    repo.publish(package(make_chart(tmp_path / "a", "redis", "17.1.0", message="from-repo"),
                         tmp_path / "packages", home))
    registry.push(package(make_chart(tmp_path / "b", "cache", "0.4.2", message="from-oci"),
                          tmp_path / "packages", home))
    oci = f"oci://{registry.host}/charts"
    make_chart(tmp_path / "repo" / "apps", "shop", "1.0.0", dependencies=(
        f"  - name: redis\n    version: '~17.1'\n    repository: {repo.url}\n"
        f"  - name: cache\n    version: '>=0.4.0 <1'\n    repository: {oci}\n"))
    root = write_files(tmp_path / "repo", {"gitgate.yaml": allow(
        {"url": repo.url, "caFile": str(ca.pem)}, {"url": oci, "caFile": str(ca.pem)})})
    cache = tmp_path / "cache"
    locked = gitgate("lock", str(root), cache=cache)
    assert locked.returncode == 0, locked.stderr
    lock = (root / "apps/shop/chart.lock.yaml").read_text()
    assert "dependency: redis" in lock and "version: 17.1.0" in lock
    assert "dependency: cache" in lock and "version: 0.4.2" in lock
    done, document = rendered(cache, root)
    assert done.returncode == 0, done.stderr
    said = sorted(o["data"]["message"] for o in objects(document, "apps-shop"))
    assert said == ["from-oci", "from-repo", "hello"]
    assert not (root / "apps/shop/charts").exists()  # nothing vendored into the repo


def test_a_republished_archive_is_refused_by_its_digest(servers, tmp_path):
    ca, repo, _, home = servers
    repo.publish(package(make_chart(tmp_path / "one", "podinfo", "6.5.0"),
                         tmp_path / "first", home))
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": allow({"url": repo.url, "caFile": str(ca.pem)}),
        "apps/podinfo/bundle.yaml": f"values: {{message: hi}}\nhelm:\n  repo: {repo.url}\n"
                                    "  chart: podinfo\n  version: '6.5.0'\n"})
    assert gitgate("lock", str(root), cache=tmp_path / "cache").returncode == 0
    # the same version published again with other templates; a fresh store must fetch it
    repo.publish(package(make_chart(tmp_path / "two", "podinfo", "6.5.0", message="evil"),
                         tmp_path / "second", home))
    done, document = rendered(tmp_path / "fresh", root)
    assert done.returncode == 1
    problem = next(p for p in document["errors"] if p["source"] == "apps/podinfo")
    assert problem["reason"] == "ChartFetchFailed"
    assert (problem["file"], problem["line"]) == ("apps/podinfo/bundle.yaml", 5)
    assert "not the locked" in problem["message"] and repo.url in problem["message"]
    assert "evil" not in done.stdout
    assert not list((tmp_path / "fresh").rglob("*.tgz"))  # nothing of it kept


def test_a_registry_outside_the_allow_list_gets_no_request(servers, tmp_path):
    ca, repo, registry, home = servers
    oci = registry.push(package(make_chart(tmp_path / "s", "web", "1.0.0"),
                                tmp_path / "packages", home))
    before = len(registry.requests())
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": allow({"url": repo.url, "caFile": str(ca.pem)},
                              {"url": f"{oci}/team-b", "caFile": str(ca.pem)},
                              {"url": oci, "caFile": str(ca.pem), "tenants": ["team-b"]})
        + "tenants:\n  - {name: team-a, paths: ['apps/a/**'], namespaces: ['*']}\n"
          "  - {name: team-b, paths: ['apps/b/**'], namespaces: ['*']}\n",
        "apps/a/web/bundle.yaml": f"helm: {{chart: {oci}/web, version: '1.0.0'}}\n",
    })
    cache = tmp_path / "cache"
    locked = gitgate("lock", str(root), cache=cache)
    assert locked.returncode == 1
    assert "not open to team-a; nothing is fetched from it" in locked.stderr
    assert "apps/a/web/bundle.yaml:1" in locked.stderr
    # a hand-written lock does not get it fetched either
    digest = sha256(tmp_path / "packages" / "web-1.0.0.tgz")
    write_files(root, {"apps/a/web/chart.lock.yaml": (
        f"charts:\n- repo: {oci}\n  chart: web\n  requested: 1.0.0\n  version: 1.0.0\n"
        f"  digest: '{digest}'\n")})
    done, document = rendered(cache, root)
    problem = next(p for p in document["errors"] if p["source"] == "apps/a/web")
    assert problem["reason"] == "ChartNotAllowed" and oci in problem["message"]
    checked = gitgate("check", str(root), cache=cache)
    assert checked.returncode == 1 and "ChartNotAllowed" in checked.stdout
    assert len(registry.requests()) == before  # the registry's log shows no request


def test_credentials_are_sent_and_never_shown(tmp_path):
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    password = "s3cr3t-Pa55word-xyz"
    with ChartRepo(tmp_path / "served", ca, home, credentials=("robot", password)) as repo:
        repo.publish(package(make_chart(tmp_path / "s", "podinfo", "6.5.0"),
                             tmp_path / "packages", home))
        secret = tmp_path / "creds.yaml"
        secret.write_text(f"username: robot\npassword: {password}\n")
        root = write_files(tmp_path / "repo", {
            "gitgate.yaml": allow({"url": repo.url, "caFile": str(ca.pem),
                                   "credentials": {"file": str(secret)}}),
            "apps/podinfo/bundle.yaml": f"helm: {{repo: {repo.url}, chart: podinfo, "
                                        "version: '6.5.0'}\n"})
        cache = tmp_path / "cache"
        outputs = [gitgate("lock", str(root), cache=cache)]
        assert outputs[0].returncode == 0, outputs[0].stderr
        outputs += [gitgate("render", str(root), cache=tmp_path / "fresh"),
                    gitgate("plan", str(root), "-o", "json", cache=tmp_path / "fresh")]
        assert all(o.returncode == 0 for o in outputs), [o.stderr for o in outputs]
        secret.write_text(f"username: robot\npassword: {password}-wrong\n")
        outputs += [gitgate("check", str(root), cache=tmp_path / "other"),
                    gitgate("lock", str(root), "--upgrade", cache=tmp_path / "other")]
        assert outputs[-1].returncode == 1 and "refused the credentials" in outputs[-1].stderr
        assert "ChartFetchFailed" in outputs[-2].stdout
    for done in outputs:
        assert password not in done.stdout + done.stderr
        assert "cm9ib3Q6" not in done.stdout + done.stderr  # nor its base64 (robot:...)


def test_check_names_the_line_of_a_missing_or_stale_lock(servers, tmp_path):
    ca, repo, _, home = servers
    for version in ("6.5.0", "6.6.0"):
        repo.publish(package(make_chart(tmp_path / version, "podinfo", version),
                             tmp_path / "packages", home))
    bundle = ("namespace: web\nhelm:\n  repo: {url}\n  chart: podinfo\n"
              "  version: '{version}'\nplacement: none\n")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": allow({"url": repo.url, "caFile": str(ca.pem)}),
        "apps/podinfo/bundle.yaml": bundle.format(url=repo.url, version="6.5.0")})
    cache = tmp_path / "cache"
    missing = gitgate("check", str(root), cache=cache)
    assert missing.returncode == 1
    assert "apps/podinfo/bundle.yaml:5: " in missing.stdout and "is not locked" in missing.stdout
    assert "gitgate lock apps/podinfo" in missing.stdout and repo.url in missing.stdout
    assert gitgate("lock", str(root), cache=cache).returncode == 0
    assert gitgate("check", str(root), cache=cache).returncode == 0
    write_files(root, {"apps/podinfo/bundle.yaml": bundle.format(url=repo.url,
                                                                 version="6.6.0")})
    stale = gitgate("check", str(root), cache=cache)
    assert stale.returncode == 1 and "ChartNotLocked" in stale.stdout
    assert "apps/podinfo/bundle.yaml:5: " in stale.stdout and "the lock is stale" in stale.stdout


def test_a_held_bundle_stays_on_its_chart_version_until_approve_approves_that_chart(
        servers, tmp_path, kube, tools, monkeypatch, capsys):
    ca, repo, _, home = servers
    for version in ("6.5.0", "6.6.0"):
        repo.publish(package(make_chart(tmp_path / version, "podinfo", version),
                             tmp_path / "packages", home))
    monkeypatch.setenv("GITGATE_CHART_CACHE", str(tmp_path / "cache"))
    ns = kube.ns("web")
    name = f"{kube.run_id}-podinfo"
    bundle = (f"name: {name}\nnamespace: {ns}\nhelm:\n  repo: {repo.url}\n  chart: podinfo\n"
              "  version: '{version}'\n")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": "defaults: {placement: {clusterAffinity: {clusterNames: [m1]}}}\n"
                        + allow({"url": repo.url, "caFile": str(ca.pem)}),
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "ns/bundle.yaml": f"name: {kube.run_id}-ns\n",
        "apps/podinfo/bundle.yaml": bundle.format(version="6.5.0")})
    assert main(["lock", str(root)]) == 0
    git_repo = committed_repo(root)
    flags = ["--kubeconfig", kube.kubeconfig, "--instance", kube.run_id]

    def live_version() -> str:
        found = kube.cluster.get("v1", "ConfigMap", ns, "podinfo-podinfo")
        return found["data"]["version"]

    def plan() -> dict:
        capsys.readouterr()
        main(["plan", str(root), "-o", "json"])
        return {b["name"]: b for b in json.loads(capsys.readouterr().out)["bundles"]}[name]

    assert main(["apply", str(root), *flags]) == 0
    assert live_version() == "6.5.0"
    write_files(root, {"gates/hold.yaml": f"""
        apiVersion: gitgate.io/v1alpha1
        kind: Gate
        metadata: {{name: hold}}
        spec:
          bundles: ['{name}']
          reason: release train
    """, "apps/podinfo/bundle.yaml": bundle.format(version="6.6.0")})
    assert main(["lock", str(root)]) == 0
    git_repo.git.add("-A")
    git_repo.git.commit("-m", "hold, and podinfo 6.6.0")
    held = plan()
    assert held["verdict"] == "held"
    main(["apply", str(root), *flags])
    assert live_version() == "6.5.0"  # held: the chart upgrade waits

    assert main(["approve", name, "--repo", str(root)]) == 0
    assert plan()["verdict"] == "apply" and plan()["digest"] == held["digest"]
    assert main(["apply", str(root), *flags]) == 0
    assert live_version() == "6.6.0"
    # the approval names that chart's archive: 6.6.0 published again, rendering the same
    # objects from another archive, is held again once locked
    approved = plan()
    again = make_chart(tmp_path / "again", "podinfo", "6.6.0")
    (again / "README.md").write_text("the same templates, another archive\n")
    repo.publish(package(again, tmp_path / "republished", home))
    assert main(["lock", str(root), "--upgrade"]) == 0
    relocked = plan()
    assert relocked["verdict"] == "held" and relocked["digest"] != approved["digest"]
    capsys.readouterr()
    main(["render", str(root), "-o", "json", "--bundle", name])
    assert [o["data"]["version"] for o in json.loads(capsys.readouterr().out)["bundles"][0][
        "objects"]] == ["6.6.0"]
