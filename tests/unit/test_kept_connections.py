"""Which kubeconfigs gitgate's kept-alive connections serve (`apiserver.connections`), and
where a server's address puts them: a proxy, socket options or a host name asserted apart
from the server's leave every request to the official client's own path."""

from __future__ import annotations

import ssl

import pytest
from kubernetes import client as k8s

from gitgate.apiserver.connections import Connections, tls_context


def configuration(host: str = "https://127.0.0.1:6443", **settings: object) -> k8s.Configuration:
    config = k8s.Configuration()
    config.host = host
    for name, value in settings.items():
        setattr(config, name, value)
    return config


def test_a_plain_kubeconfig_is_served_over_kept_connections():
    pool = Connections.for_configuration(configuration())
    assert pool is not None and pool.https
    assert (pool.host, pool.port, pool.prefix) == ("127.0.0.1", 6443, "")


@pytest.mark.parametrize("settings", [
    {"proxy": "http://proxy.example.test:3128"},
    {"proxy": "socks5://proxy.example.test:1080"},
    {"socket_options": [(6, 1, 1)]},
    {"assert_hostname": "kube.example.test"},
], ids=["http proxy", "socks proxy", "socket options", "asserted host name"])
def test_what_only_urllib3_connects_as_asked_stays_on_the_official_path(settings):
    assert Connections.for_configuration(configuration(**settings)) is None


def test_a_server_behind_a_path_and_an_ipv6_address():
    behind = Connections.for_configuration(configuration("https://rancher.example.test/k8s/clusters/c-1/"))
    assert behind is not None
    assert (behind.host, behind.port, behind.prefix) == ("rancher.example.test", None,
                                                         "/k8s/clusters/c-1")
    ipv6 = Connections.for_configuration(configuration("https://[::1]:6443"))
    assert ipv6 is not None and (ipv6.host, ipv6.port) == ("::1", 6443)
    plain = Connections.for_configuration(configuration("http://127.0.0.1:8080"))
    assert plain is not None and not plain.https and plain.context is None


def test_tls_follows_the_kubeconfig_verification_settings():
    verified = tls_context(configuration())
    assert verified.verify_mode == ssl.CERT_REQUIRED and verified.check_hostname
    unverified = tls_context(configuration(verify_ssl=False))
    assert unverified.verify_mode == ssl.CERT_NONE and not unverified.check_hostname
    unnamed = tls_context(configuration(assert_hostname=False))
    assert unnamed.verify_mode == ssl.CERT_REQUIRED and not unnamed.check_hostname
    assert verified.minimum_version >= ssl.TLSVersion.TLSv1_2


def idle_on(pool: Connections) -> tuple[object, object]:
    """An idle connection in `pool` whose socket's other end the test holds (a socketpair:
    a close of one end is seen by the other at once, no network timing involved)."""
    import socket

    ours, servers = socket.socketpair()
    connection = pool._new((1.0, 1.0))
    connection.sock = ours
    pool._idle.append(connection)
    return connection, servers


def test_an_idle_connection_the_server_closed_is_not_taken():
    pool = Connections("http://127.0.0.1:1", None)
    closed, servers_end = idle_on(pool)
    servers_end.close()
    taken = pool._take((1.0, 1.0))
    assert taken is not closed and taken.sock is None  # a new one, not yet connected
    assert closed.sock is None  # and the dead one was closed, not kept


def test_an_idle_connection_the_server_sent_on_unasked_is_not_taken():
    """Bytes while no request is in flight (a stray answer) would be read as the next one's."""
    pool = Connections("http://127.0.0.1:1", None)
    stray, servers_end = idle_on(pool)
    servers_end.sendall(b"HTTP/1.1 200 OK\r\n")
    assert pool._take((1.0, 1.0)) is not stray
    servers_end.close()


def test_an_idle_connection_still_open_is_taken_again():
    pool = Connections("http://127.0.0.1:1", None)
    alive, servers_end = idle_on(pool)
    assert pool._take((1.0, 1.0)) is alive
    alive.close()
    servers_end.close()
