"""The kubernetes client re-applies the kubeconfig before every request when it holds a token;
gitgate runs that hook at most once per window (plain data, a fake clock)."""

from types import SimpleNamespace

from gitgate.apiserver.transport import throttled_refresh


def test_the_token_hook_runs_once_per_window_and_keeps_its_place():
    now = [100.0]
    calls: list[float] = []
    configuration = SimpleNamespace(refresh_api_key_hook=None)

    def client_hook(config) -> None:
        """Like the client's: refreshes, then installs itself again."""
        calls.append(now[0])
        config.refresh_api_key_hook = client_hook

    configuration.refresh_api_key_hook = throttled_refresh(client_hook, 10.0, lambda: now[0])
    wrapper = configuration.refresh_api_key_hook
    for moment in (100.0, 101.0, 109.9, 110.0, 115.0, 130.0):
        now[0] = moment
        configuration.refresh_api_key_hook(configuration)
        assert configuration.refresh_api_key_hook is wrapper  # never replaced by the client's
    assert calls == [100.0, 110.0, 130.0]
