"""The pure rules of charts from elsewhere: which URL an allow-list entry covers, for whom;
helm's version ranges; the lock file's text; what gitgate.yaml and bundle.yaml may say."""

from __future__ import annotations

import pytest

from gitgate.charts.semver import best_match
from gitgate.errors import ConfigError
from gitgate.model.chartspec import (
    ChartPolicy,
    ChartRef,
    ChartRepository,
    LockedChart,
    url_parts,
)
from gitgate.source.chartlock import format_chart_lock, parse_chart_lock
from gitgate.source.config import parse_bundle_options, parse_repo_config

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(("url", "covered"), [
    ("https://charts.example.com/stable", True),
    ("https://charts.example.com/stable/podinfo-1.0.0.tgz", True),
    ("https://charts.example.com/stable-evil/index.yaml", False),
    ("https://CHARTS.example.com/stable/index.yaml", True),
    ("https://charts.example.com:8443/stable/index.yaml", False),
    ("http://charts.example.com/stable/index.yaml", False),
    ("https://charts.example.com@evil.example/stable/x", False),
    ("https://charts.example.com/stable/../other/x", False),
    ("https://charts.example.com/stable/x?to=evil", False),
])
def test_an_entry_covers_its_url_and_what_is_below_it_only(url, covered):
    assert ChartRepository("https://charts.example.com/stable").covers(url) is covered


@pytest.mark.parametrize(("url", "fetchable"), [
    ("http://127.0.0.1:8879", True),
    ("http://127.0.0.1", True),
    ("http://[::1]:8879/charts", True),
    ("http://127.0.0.1.evil.example:8879", False),
    ("http://localhost:8879", False),  # a name: whatever resolves it decides where it goes
    ("http://10.0.0.1:8879", False),
    ("http://[::2]:8879", False),
])
def test_plain_http_is_for_a_loopback_address_only(url, fetchable):
    assert (url_parts(url) is not None) is fetchable
    assert ChartRepository(url).covers(url + "/index.yaml") is fetchable


def test_a_loopback_repository_is_sent_no_credentials():
    config = parse_repo_config("charts:\n  repositories:\n    - url: http://127.0.0.1:8879\n")
    assert config.charts.repositories[0].url == "http://127.0.0.1:8879"
    with pytest.raises(ConfigError) as sent:
        parse_repo_config("charts:\n  repositories:\n    - url: http://127.0.0.1:8879\n"
                          "      credentials: {file: /c.yaml}\n")
    assert "https://" in sent.value.message
    for wrong in ("http://charts.example.com", "http://localhost:8879"):
        with pytest.raises(ConfigError):
            parse_repo_config(f"charts:\n  repositories:\n    - url: {wrong}\n")


def test_an_entry_with_tenants_is_open_to_them_alone():
    policy = ChartPolicy((ChartRepository("oci://reg.example/team-a", tenants=("team-a",)),
                          ChartRepository("oci://reg.example/shared")))
    assert policy.allowing("oci://reg.example/team-a/web", "team-a") is not None
    assert policy.allowing("oci://reg.example/team-a/web", "team-b") is None
    assert policy.allowing("oci://reg.example/shared/web", "team-b") is not None
    assert ChartPolicy().allowing("oci://reg.example/shared/web", "platform") is None


@pytest.mark.parametrize(("wanted", "chosen"), [
    ("6.5.0", "6.5.0"), ("~6.5", "6.5.1"), ("^6", "6.6.0"), (">=6.0.0 <7", "6.6.0"),
    ("6.x", "6.6.0"), ("*", "7.0.0"), ("6.4.0 - 6.5.0", "6.5.0"), ("^7.1.0-0", "7.1.0-rc.1"),
    ("6.4.0 || 7.0.0", "7.0.0"), ("9", None),
])
def test_a_range_picks_the_highest_version_it_allows(wanted, chosen):
    published = ["6.4.0", "6.5.0", "6.5.1", "6.6.0", "7.0.0", "7.1.0-rc.1"]
    assert best_match(wanted, published) == chosen


def test_a_lock_reads_back_what_was_written_and_names_a_bad_line():
    entries = (LockedChart("", ChartRef("oci://reg.example/charts", "web", "^1"), "1.3.0",
                           DIGEST),
               LockedChart("redis", ChartRef("https://charts.example.com", "redis", "~17"),
                           "17.1.0", DIGEST))
    text = format_chart_lock(entries)
    assert parse_chart_lock(text, "x/chart.lock.yaml") == entries
    with pytest.raises(ConfigError) as bad:
        parse_chart_lock(text.replace(DIGEST, "sha256:short", 1), "x/chart.lock.yaml")
    assert bad.value.line == 4 and "digest" in bad.value.message


def test_credentials_are_named_never_written_in_the_repo():
    with pytest.raises(ConfigError) as inline:
        parse_repo_config("charts:\n  repositories:\n    - url: https://c.example\n"
                          "      credentials: {username: u, password: hunter2}\n")
    assert inline.value.line == 4 and "hunter2" not in inline.value.message
    with pytest.raises(ConfigError):
        parse_repo_config("charts:\n  repositories:\n    - url: https://u:p@c.example\n")
    config = parse_repo_config("charts:\n  repositories:\n    - url: oci://r.example/x\n"
                               "      credentials: {secret: pull}\n")
    assert config.charts.repositories[0].credentials_secret == "pull"


def test_bundle_yaml_names_a_published_chart_either_way():
    repo = parse_repo_config(None)
    oci = parse_bundle_options("helm: {chart: oci://r.example/charts/web, version: '^1'}\n",
                               "a/bundle.yaml", repo)
    assert oci.chart == ChartRef("oci://r.example/charts", "web", "^1")
    indexed = parse_bundle_options("helm: {repo: https://c.example/, chart: podinfo, "
                                   "version: 6.5.0}\n", "a/bundle.yaml", repo)
    assert indexed.chart == ChartRef("https://c.example", "podinfo", "6.5.0")
    for bad in ("helm: {chart: podinfo, version: '1'}\n",
                "helm: {repo: http://c.example, chart: podinfo, version: '1'}\n",
                "helm: {repo: https://c.example, chart: podinfo, version: 6.5}\n",
                "helm: {chart: oci://r.example/web, version: '1'}\ndir: overlay\n"):
        with pytest.raises(ConfigError):
            parse_bundle_options(bad, "a/bundle.yaml", repo)


def test_verify_names_a_keyring_for_chart_repositories_and_registries():
    config = parse_repo_config("charts:\n  repositories:\n    - url: https://c.example\n"
                               "      verify: true\n      keyring: {secret: chart-keys}\n")
    entry = config.charts.repositories[0]
    assert entry.verify and entry.keyring_secret == "chart-keys" and entry.keyring_file is None
    for wrong in ("      verify: true\n",  # no keyring
                  "      verify: yes-please\n      keyring: {file: /k.gpg}\n",
                  "      keyring: {file: /k.gpg}\n",  # a keyring nothing verifies with
                  "      verify: true\n      keyring: {file: keys/k.gpg}\n"):  # in the repo
        with pytest.raises(ConfigError):
            parse_repo_config("charts:\n  repositories:\n    - url: https://c.example\n"
                              + wrong)
    oci = parse_repo_config("charts:\n  repositories:\n    - url: oci://r.example/x\n"
                            "      verify: true\n      keyring: {file: /k.gpg}\n")
    assert oci.charts.repositories[0].verify  # a registry's provenance layer is checked


def test_an_armored_keyring_is_read_as_its_packets():
    import base64

    from gitgate.charts.chartsignature import dearmored

    packets = bytes(range(200))
    body = base64.b64encode(packets).decode()
    armored = ("-----BEGIN PGP PUBLIC KEY BLOCK-----\nComment: test\n\n"
               + "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
               + "\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n").encode()
    assert dearmored(armored) == packets
    assert dearmored(packets) == packets  # binary: as it is
    with pytest.raises(ValueError):
        dearmored(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n")
