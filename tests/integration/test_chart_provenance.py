"""Provenance, where the platform asks for it: a chart repository entry with `verify: true`
and a keyring by reference has each chart's `.prov` checked by helm's own verification
(`helm verify --keyring`). Charts signed with a throwaway key by the real `helm package
--sign`; one that does not verify fails its source (fail closed), naming the file, the line
and the repository."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.support.chartservers import (
    ChartCA,
    ChartRepo,
    ChartSigner,
    allow,
    chart_servers,
    gitgate_cli,
    make_chart,
    package,
)

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("gpg"), reason="gpg makes the signing key "
                                 "(Debian: gnupg)")]


@pytest.fixture
def signers(tmp_path: Path):
    made = [ChartSigner(tmp_path / "trusted"),
            ChartSigner(tmp_path / "other", "Mallory <mallory@example.com>")]
    yield made
    for signer in made:
        signer.close()


BUNDLE = "namespace: web\nplacement: none\nhelm:\n  repo: {url}\n  chart: podinfo\n" \
         "  version: '{version}'\n"


def _refused_unverified(root: Path, cache: Path, line: int, where: str) -> None:
    """`render` fails the source for its provenance (ChartUnverified at bundle.yaml:line,
    naming `where`) and renders nothing of it."""
    done = gitgate_cli("render", str(root), "-o", "json", cache=cache)
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert not any(b["objects"] for b in document["bundles"])  # nothing rendered
    [problem] = document["errors"]
    assert problem["reason"] == "ChartUnverified"
    assert (problem["file"], problem["line"]) == ("apps/podinfo/bundle.yaml", line)
    assert where in problem["message"]


def test_a_signed_chart_verifies_and_one_that_does_not_fails_its_source(signers, tmp_path):
    trusted, other = signers
    ca = ChartCA(tmp_path)
    home = tmp_path / "helm-home"
    cache = tmp_path / "cache"
    with ChartRepo(tmp_path / "served", ca, home) as repo:
        repo.publish(trusted.package(make_chart(tmp_path / "a", "podinfo", "6.5.0"),
                                     tmp_path / "signed", home))
        repo.publish(other.package(make_chart(tmp_path / "b", "podinfo", "6.6.0"),
                                   tmp_path / "mallory", home))
        repo.publish(package(make_chart(tmp_path / "c", "podinfo", "6.7.0"),
                             tmp_path / "unsigned", home))
        root = write_files(tmp_path / "repo", {
            "gitgate.yaml": allow({"url": repo.url, "caFile": str(ca.pem), "verify": True,
                                   "keyring": {"file": str(trusted.armored)}}),
            "apps/podinfo/bundle.yaml": BUNDLE.format(url=repo.url, version="6.5.0")})
        locked = gitgate_cli("lock", str(root), cache=cache)
        assert locked.returncode == 0, locked.stderr
        assert any(r.endswith("podinfo-6.5.0.tgz.prov") for r in repo.requests)
        rendered = gitgate_cli("render", str(root), "-o", "json", cache=tmp_path / "fresh")
        assert rendered.returncode == 0, rendered.stderr
        assert json.loads(rendered.stdout)["bundles"][0]["objects"][0]["data"]["version"] \
            == "6.5.0"
        assert gitgate_cli("check", str(root), cache=cache).returncode == 0

        # signed by a key the keyring does not hold: refused, by lock and by a pass
        write_files(root, {"apps/podinfo/bundle.yaml": BUNDLE.format(url=repo.url,
                                                                     version="6.6.0")})
        refused = gitgate_cli("lock", str(root), cache=cache)
        assert refused.returncode == 1
        assert "apps/podinfo/bundle.yaml:6: " in refused.stderr
        assert f"{repo.url} podinfo 6.6.0: its provenance file does not verify" in \
            refused.stderr
        # a lock written by hand (the archive's true digest) is no way around it
        archive = tmp_path / "mallory" / "podinfo-6.6.0.tgz"
        digest = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
        write_files(root, {"apps/podinfo/chart.lock.yaml": (
            f"charts:\n- repo: {repo.url}\n  chart: podinfo\n  requested: 6.6.0\n"
            f"  version: 6.6.0\n  digest: '{digest}'\n")})
        _refused_unverified(root, tmp_path / "other", 6, repo.url)
        checked = gitgate_cli("check", str(root), cache=tmp_path / "other")
        assert checked.returncode == 1 and "ChartUnverified" in checked.stdout

        # a chart the repository publishes with no provenance file: refused too
        write_files(root, {"apps/podinfo/bundle.yaml": BUNDLE.format(url=repo.url,
                                                                     version="6.7.0")})
        (root / "apps/podinfo/chart.lock.yaml").unlink()
        unsigned = gitgate_cli("lock", str(root), cache=cache)
        assert unsigned.returncode == 1
        assert "offers no provenance file" in unsigned.stderr

        # the signed archive replaced (and indexed) beside its old provenance file: helm
        # checks the archive's hash the provenance file signs
        repo.publish(package(make_chart(tmp_path / "d", "podinfo", "6.5.0", message="evil"),
                             tmp_path / "swapped", home))
        assert (repo.folder / "podinfo-6.5.0.tgz.prov").exists()
        write_files(root, {"apps/podinfo/bundle.yaml": BUNDLE.format(url=repo.url,
                                                                     version="6.5.0")})
        swapped = gitgate_cli("lock", str(root), "--upgrade", cache=tmp_path / "third")
        assert swapped.returncode == 1 and "does not verify" in swapped.stderr


OCI_BUNDLE = "namespace: web\nplacement: none\nhelm:\n  chart: {chart}\n  version: '{version}'\n"


def test_an_oci_chart_verifies_by_the_provenance_layer_helm_push_uploads(signers, tmp_path):
    """`helm push` uploads a `.prov` lying beside the archive as the manifest's provenance
    layer (what `helm pull --verify oci://...` reads). With `verify: true` on the registry's
    entry, a chart whose layer is missing, signed by another key or signs another archive
    fails its source, naming the file, the line and the registry."""
    trusted, other = signers
    with chart_servers(tmp_path) as (ca, _, registry):
        home = tmp_path / "helm-home"
        registry.push(trusted.package(make_chart(tmp_path / "a", "podinfo", "6.5.0"),
                                      tmp_path / "signed", home))
        registry.push(other.package(make_chart(tmp_path / "b", "podinfo", "6.6.0"),
                                    tmp_path / "mallory", home))
        registry.push(package(make_chart(tmp_path / "c", "podinfo", "6.7.0"),
                              tmp_path / "unsigned", home))
        # a provenance file the trusted key signed, uploaded beside another archive
        signed = trusted.package(make_chart(tmp_path / "d", "podinfo", "6.8.0"),
                                 tmp_path / "signed-d", home)
        swapped = package(make_chart(tmp_path / "e", "podinfo", "6.8.0", message="evil"),
                          tmp_path / "swapped", home)
        shutil.copy(f"{signed}.prov", f"{swapped}.prov")
        registry.push(swapped)

        chart = f"oci://{registry.host}/charts/podinfo"
        root = write_files(tmp_path / "repo", {
            "gitgate.yaml": allow({"url": f"oci://{registry.host}/charts",
                                   "caFile": str(ca.pem), "verify": True,
                                   "keyring": {"file": str(trusted.pubring)}}),
            "apps/podinfo/bundle.yaml": OCI_BUNDLE.format(chart=chart, version="6.5.0")})
        cache = tmp_path / "cache"
        locked = gitgate_cli("lock", str(root), cache=cache)
        assert locked.returncode == 0, locked.stderr
        rendered = gitgate_cli("render", str(root), "-o", "json", cache=tmp_path / "fresh")
        assert rendered.returncode == 0, rendered.stderr
        assert json.loads(rendered.stdout)["bundles"][0]["objects"][0]["data"]["version"] \
            == "6.5.0"
        layer_reads = [r for r in registry.requests() if "/blobs/sha256:" in r]
        assert len(layer_reads) >= 4  # lock and render: each the chart and its provenance

        for version, said in (("6.6.0", "its provenance file does not verify"),
                              ("6.7.0", "the registry holds no provenance layer"),
                              ("6.8.0", "its provenance file does not verify")):
            write_files(root, {"apps/podinfo/bundle.yaml": OCI_BUNDLE.format(
                chart=chart, version=version)})
            refused = gitgate_cli("lock", str(root), cache=cache)
            assert refused.returncode == 1, version
            assert f"apps/podinfo/bundle.yaml:5: {chart} {version}: " in refused.stderr
            assert said in refused.stderr, refused.stderr

        # a lock written by hand (the archive's true digest) is no way around it
        archive = tmp_path / "mallory" / "podinfo-6.6.0.tgz"
        digest = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
        write_files(root, {
            "apps/podinfo/bundle.yaml": OCI_BUNDLE.format(chart=chart, version="6.6.0"),
            "apps/podinfo/chart.lock.yaml": (
                f"charts:\n- repo: oci://{registry.host}/charts\n  chart: podinfo\n"
                f"  requested: 6.6.0\n  version: 6.6.0\n  digest: '{digest}'\n")})
        _refused_unverified(root, tmp_path / "other", 5, registry.host)
