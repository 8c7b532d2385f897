"""The bounded pool takes urllib3's connection pool of a server once, not by the parsed URL on
every request, and leaves to the pool manager what urllib3 would rewrite (against the
emulator over real sockets)."""

from __future__ import annotations

import pytest

from gitgate.apiserver.apierrors import Timeouts
from gitgate.apiserver.exchange import bounded_pool
from gitgate.apiserver.transport import load_client
from tests.kubeapi.server import KubeApiEmulator

pytestmark = pytest.mark.integration

BOUNDS = Timeouts(connect=2.0, read=5.0, max_answer=1 << 20)


def test_the_servers_pool_is_taken_once_and_a_rewritten_target_goes_through_the_manager(
        tmp_path, monkeypatch):
    with KubeApiEmulator() as emulator:
        api = load_client(str(emulator.write_kubeconfig(tmp_path / "kubeconfig")),
                          timeouts=BOUNDS)
        pool = bounded_pool(api)
        taken: list[str] = []
        through_manager: list[str] = []
        take, urlopen = pool.inner.connection_from_url, pool.inner.urlopen
        monkeypatch.setattr(pool.inner, "connection_from_url",
                            lambda url: taken.append(url) or take(url))
        monkeypatch.setattr(pool.inner, "urlopen",
                            lambda method, url, **kw: through_manager.append(url)
                            or urlopen(method, url, **kw))
        base = emulator.url.rstrip("/")
        for _ in range(3):
            answer = pool.exchange("GET", f"{base}/api/v1/namespaces/shop/configmaps"
                                          "?labelSelector=a%3Db&limit=5", None, {})
            assert answer.status == 200 and b'"items"' in answer.data
        assert taken == [base] and through_manager == []
        # a dot segment: urllib3's manager normalizes it, so the manager sends it
        answer = pool.exchange("GET", f"{base}/api/v1/namespaces/shop/../shop/configmaps",
                               None, {})
        assert answer.status == 200
        assert through_manager == [f"{base}/api/v1/namespaces/shop/../shop/configmaps"]
        assert taken == [base]
