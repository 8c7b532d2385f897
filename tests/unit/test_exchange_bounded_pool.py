"""Every kubeconfig's requests go through one bounded pool (`apiserver.exchange`): the
official client's own pool manager, a proxy's too, wrapped so that the transport and the
official client's generated APIs (the leader Lease's) share its bounds; and a request that
could split into two never goes out."""

from __future__ import annotations

import pytest
import urllib3
from kubernetes import client as k8s

from gitgate.apiserver.apierrors import Timeouts
from gitgate.apiserver.exchange import BoundedPool, bounded_pool
from gitgate.apiserver.transport import Transport, impersonating


def api_for(host: str = "https://127.0.0.1:6443", **settings: object) -> k8s.ApiClient:
    config = k8s.Configuration()
    config.host = host
    for name, value in settings.items():
        setattr(config, name, value)
    return k8s.ApiClient(config)


@pytest.mark.parametrize("settings", [
    {}, {"proxy": "http://proxy.example.test:3128"},
    {"socket_options": [(6, 1, 1)]}, {"assert_hostname": "kube.example.test"},
], ids=["plain", "http proxy", "socket options", "asserted host name"])
def test_every_kubeconfig_goes_through_its_clients_pool_bounded(settings):
    api = api_for(**settings)
    manager = api.rest_client.pool_manager
    transport = Transport(api, timeouts=Timeouts(read=7.0, max_answer=1 << 20))
    pool = api.rest_client.pool_manager
    assert isinstance(pool, BoundedPool) and pool.inner is manager
    assert transport.pool is pool and pool.timeouts.max_answer == 1 << 20
    assert isinstance(manager, urllib3.ProxyManager) == ("proxy" in settings)
    for pool_class in manager.pool_classes_by_scheme.values():  # deadlines can cut them
        assert "gitgate_requests" in dir(pool_class.ConnectionCls)


def test_an_impersonating_client_shares_the_pool():
    api = api_for()
    assert bounded_pool(impersonating(api, "alice")) is bounded_pool(api)


def test_the_generated_apis_of_the_official_client_go_through_the_bounded_pool(monkeypatch):
    """What the Lease's CoordinationV1Api sends ends in `BoundedPool.exchange`."""
    api = api_for("http://127.0.0.1:1")
    pool = bounded_pool(api)
    sent = []

    def exchange(method, url, body, headers, timeouts=None):
        sent.append((method, url))
        raise urllib3.exceptions.NewConnectionError(None, "refused")  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "exchange", exchange)
    with pytest.raises(urllib3.exceptions.NewConnectionError):
        k8s.CoordinationV1Api(api).read_namespaced_lease("gitgate", "gitgate-system")
    assert sent == [("GET", "http://127.0.0.1:1/apis/coordination.k8s.io/v1/namespaces/"
                            "gitgate-system/leases/gitgate")]


@pytest.mark.parametrize("header", ["alice\r\nX-Evil: 1", "alice\nX-Evil: 1"])
def test_a_header_that_could_split_the_request_is_refused_before_sending(header):
    api = api_for("http://127.0.0.1:1")
    api.set_default_header("Impersonate-User", header)
    with pytest.raises(ValueError, match="Invalid header value"):
        Transport(api).pool.exchange("GET", "http://127.0.0.1:1/api/v1/namespaces", None,
                                     {"Impersonate-User": header})
